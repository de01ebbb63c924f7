package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criTimeout bounds every CRI call; RunPodSandbox and StopPodSandbox run
// the whole CNI chain, which takes far less.
const criTimeout = 2 * time.Minute

// criClient speaks the CRI runtime service, as the kubelet does, to the
// containerd of a node.
type criClient struct {
	conn *grpc.ClientConn
	rt   cri.RuntimeServiceClient
}

// dialCRI connects to a CRI socket, given as a path the test can reach
// (through /proc/<holder>/root).
func dialCRI(socket string) (*criClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
	conn, err := grpc.DialContext(ctx, "unix-socket", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer), grpc.WithBlock())
	if err != nil {
		return nil, fmt.Errorf("connecting to CRI socket %s: %w", socket, err)
	}
	return &criClient{conn: conn, rt: cri.NewRuntimeServiceClient(conn)}, nil
}

// call runs one CRI request bounded by criTimeout.
func call[Req, Resp any](f func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	return f(ctx, req)
}

// podConfig is the sandbox configuration of a pod named name in namespace
// "e2e", its containers under cgroupParent, with the namespaces the kubelet
// asks for by default: the network and IPC shared by the pod, a PID
// namespace per container (CRI-O then runs no infra container).
func podConfig(name, cgroupParent string) *cri.PodSandboxConfig {
	return &cri.PodSandboxConfig{
		Metadata: &cri.PodSandboxMetadata{Name: name, Namespace: "e2e", Uid: "uid-" + name},
		Hostname: name,
		Linux: &cri.LinuxPodSandboxConfig{
			CgroupParent: cgroupParent,
			SecurityContext: &cri.LinuxSandboxSecurityContext{NamespaceOptions: &cri.NamespaceOption{
				Network: cri.NamespaceMode_POD, Pid: cri.NamespaceMode_CONTAINER, Ipc: cri.NamespaceMode_POD,
			}},
		},
	}
}

// runPod runs a pod sandbox (the pause container and its network, the
// whole CNI chain) and returns its ID.
func (c *criClient) runPod(cfg *cri.PodSandboxConfig) (string, error) {
	resp, err := call(c.rt.RunPodSandbox, &cri.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return "", fmt.Errorf("RunPodSandbox %s: %w", cfg.Metadata.Name, err)
	}
	return resp.PodSandboxId, nil
}

// podIPs returns the addresses PodSandboxStatus reports: the primary one
// first, then the additional ones.
func (c *criClient) podIPs(podID string) ([]string, error) {
	resp, err := call(c.rt.PodSandboxStatus, &cri.PodSandboxStatusRequest{PodSandboxId: podID})
	if err != nil {
		return nil, fmt.Errorf("PodSandboxStatus %s: %w", podID, err)
	}
	nw := resp.GetStatus().GetNetwork()
	if nw.GetIp() == "" {
		return nil, fmt.Errorf("PodSandboxStatus %s reports no address", podID)
	}
	ips := []string{nw.GetIp()}
	for _, ip := range nw.GetAdditionalIps() {
		ips = append(ips, ip.GetIp())
	}
	return ips, nil
}

// startContainer creates and starts a container of the busybox image in a
// pod and returns its ID.
func (c *criClient) startContainer(podID string, pod *cri.PodSandboxConfig, name string, command ...string) (string, error) {
	req := &cri.CreateContainerRequest{
		PodSandboxId: podID,
		Config: &cri.ContainerConfig{
			Metadata: &cri.ContainerMetadata{Name: name},
			// As the kubelet sends it: CRI-O verifies signatures against
			// the image the user named, and refuses a container without.
			Image:   &cri.ImageSpec{Image: busyboxImage, UserSpecifiedImage: busyboxImage},
			Command: command,
			// The pod's namespace modes, as the kubelet repeats them.
			Linux: &cri.LinuxContainerConfig{SecurityContext: &cri.LinuxContainerSecurityContext{
				NamespaceOptions: pod.GetLinux().GetSecurityContext().GetNamespaceOptions(),
			}},
		},
		SandboxConfig: pod,
	}
	created, err := call(c.rt.CreateContainer, req)
	if err != nil {
		return "", fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	if _, err := call(c.rt.StartContainer, &cri.StartContainerRequest{ContainerId: created.ContainerId}); err != nil {
		return "", fmt.Errorf("StartContainer %s: %w", name, err)
	}
	return created.ContainerId, nil
}

// exec runs a command in a container (ExecSync) and returns its standard
// output; a non-zero exit is an error carrying its standard error.
func (c *criClient) exec(containerID string, cmd ...string) (string, error) {
	resp, err := call(c.rt.ExecSync, &cri.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: 20})
	if err != nil {
		return "", fmt.Errorf("ExecSync %q: %w", cmd, err)
	}
	if resp.ExitCode != 0 {
		return string(resp.Stdout), fmt.Errorf("ExecSync %q: exit %d: %s", cmd, resp.ExitCode, strings.TrimSpace(string(resp.Stderr)))
	}
	return string(resp.Stdout), nil
}

// stopContainer stops a container, killing it at once (timeout 0), as
// the kubelet does first when it deletes a pod with no grace period.
func (c *criClient) stopContainer(containerID string) error {
	if _, err := call(c.rt.StopContainer, &cri.StopContainerRequest{ContainerId: containerID, Timeout: 0}); err != nil {
		return fmt.Errorf("StopContainer %s: %w", containerID, err)
	}
	return nil
}

// stopPod stops a pod sandbox: its containers, then its network (CNI DEL).
func (c *criClient) stopPod(podID string) error {
	if _, err := call(c.rt.StopPodSandbox, &cri.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		return fmt.Errorf("StopPodSandbox %s: %w", podID, err)
	}
	return nil
}

// removePod removes a stopped pod sandbox and its containers.
func (c *criClient) removePod(podID string) error {
	if _, err := call(c.rt.RemovePodSandbox, &cri.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		return fmt.Errorf("RemovePodSandbox %s: %w", podID, err)
	}
	return nil
}

// ready tells whether the runtime reports the two conditions the kubelet
// requires true: RuntimeReady and, once a CNI configuration is loaded,
// NetworkReady. Others (containerd 2.x's deprecation warnings) are only
// reported.
func (c *criClient) ready() error {
	resp, err := call(c.rt.Status, &cri.StatusRequest{})
	if err != nil {
		return fmt.Errorf("Status: %w", err)
	}
	for _, cond := range resp.GetStatus().GetConditions() {
		required := cond.Type == cri.RuntimeReady || cond.Type == cri.NetworkReady
		if required && !cond.Status {
			return fmt.Errorf("Status: %s is false: %s %s", cond.Type, cond.Reason, cond.Message)
		}
	}
	return nil
}
