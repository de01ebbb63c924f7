package crirow

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"cnisuite/test/crinode"
)

// pauseImage is the sandbox image every containerd of the CRI row runs,
// built from the static busybox and imported with ctr (no registry).
const pauseImage = "cnisuite.bench/pause:1"

// containerdConfig is containerd 1.6's configuration for one plugin set:
// everything under its own directories of the sandbox's tmpfs, the CRI
// plugin on, as test/e2e's TestCRI runs it.
const containerdConfig = `version = 2
root = "%[1]s/root"
state = "%[1]s/state"
[grpc]
  address = "%[1]s/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[2]q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[3]q
    conf_dir = "%[1]s/net.d"
    max_conf_num = 1
`

// runtimeNode is one containerd with its CRI plugin, running one plugin set.
type runtimeNode struct {
	name   string // "ours", "reference", "floor"
	dir    string // under /run/cnibench-cri: config, state, socket, log
	cmd    *exec.Cmd
	conn   *grpc.ClientConn
	rt     cri.RuntimeServiceClient
	cgroup string // cgroup parent of its pods
}

// startContainerd writes the node's configuration and conflist, starts
// containerd, waits for its CRI socket and imports the pause image.
func startContainerd(name, binDir, conflist, images string) (*runtimeNode, error) {
	n := &runtimeNode{name: name, dir: "/run/cnibench-cri/" + name, cgroup: "/cnibench-cri-" + name}
	if err := os.MkdirAll(filepath.Join(n.dir, "net.d"), 0o755); err != nil {
		return nil, err
	}
	config := fmt.Sprintf(containerdConfig, n.dir, pauseImage, binDir)
	if err := os.WriteFile(filepath.Join(n.dir, "config.toml"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "net.d", "10-k8s.conflist"), []byte(conflist), 0o644); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(n.dir, "containerd.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	n.cmd = exec.Command("containerd", "--config", filepath.Join(n.dir, "config.toml"))
	n.cmd.Stdout, n.cmd.Stderr = log, log
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting containerd for %s: %w", name, err)
	}
	if err := n.dial(); err != nil {
		return n, err
	}
	out, err := exec.Command("ctr", "--address", n.socket(), "-n", "k8s.io", "images", "import", images).CombinedOutput()
	if err != nil {
		return n, fmt.Errorf("importing the pause image into %s's containerd: %w: %s", name, err, out)
	}
	return n, nil
}

func (n *runtimeNode) socket() string { return filepath.Join(n.dir, "containerd.sock") }

// dial connects to the CRI socket and waits, at most a minute, until the
// runtime answers Version.
func (n *runtimeNode) dial() error {
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", n.socket())
	}
	conn, err := grpc.Dial("unix-socket", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer))
	if err != nil {
		return fmt.Errorf("CRI client for %s: %w", n.name, err)
	}
	n.conn, n.rt = conn, cri.NewRuntimeServiceClient(conn)
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := n.rt.Version(ctx, &cri.VersionRequest{})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s's containerd does not answer on %s: %w (log: %s)", n.name, n.socket(), err, filepath.Join(n.dir, "containerd.log"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop removes every pod still there, stops containerd (SIGTERM, then
// SIGKILL after 20 s), and removes its pods' cgroup parent.
func (n *runtimeNode) stop() error {
	var errs []error
	if n.rt != nil {
		errs = append(errs, n.removeAll())
		n.conn.Close()
	}
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Signal(syscall.SIGTERM) // it may have exited already
		done := make(chan error, 1)
		go func() { done <- n.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = n.cmd.Process.Kill() // Wait below reaps it
			<-done
		}
	}
	return errors.Join(append(errs, removeCgroup(n.cgroup))...)
}

// removeAll stops and removes the pods the runtime still lists.
func (n *runtimeNode) removeAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := n.rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing %s's pods: %w", n.name, err)
	}
	var errs []error
	for _, p := range resp.Items {
		if _, err := n.stopRemove(p.Id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mountCgroups mounts the cgroup hierarchies again, in the sandbox's own
// mount namespace, over its fresh sysfs.
func mountCgroups() error {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return err
	}
	out, err := exec.Command("sh", "-ec", crinode.CgroupMounts(string(data))).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mounting cgroups: %w: %s", err, out)
	}
	return nil
}

// removeCgroup removes a pods' cgroup parent, children first, from every
// hierarchy; the runtime created it on the machine's own cgroup tree.
// Equivalent to: rmdir /sys/fs/cgroup/*/$parent/* /sys/fs/cgroup/*/$parent
func removeCgroup(parent string) error {
	hierarchies, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range append(hierarchies, nil) {
		dir := filepath.Join("/sys/fs/cgroup", parent)
		if h != nil {
			dir = filepath.Join("/sys/fs/cgroup", h.Name(), parent)
		}
		children, _ := os.ReadDir(dir) // absent where the runtime never used this hierarchy
		for _, c := range children {
			if c.IsDir() {
				errs = append(errs, rmdirGone(filepath.Join(dir, c.Name())))
			}
		}
		errs = append(errs, rmdirGone(dir))
	}
	return errors.Join(errs...)
}

func rmdirGone(dir string) error {
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("rmdir %s: %w", dir, err)
	}
	return nil
}

// pauseArchive writes the pause image (the static busybox, sh and sleep)
// as a docker-archive under dir and returns its path.
func pauseArchive(dir string) (string, error) {
	root := filepath.Join(dir, "pause-rootfs")
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		return "", err
	}
	if err := requireStatic("/bin/busybox"); err != nil {
		return "", fmt.Errorf("the pause image needs the static busybox (Debian's busybox-static): %w", err)
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), bb, 0o755); err != nil {
		return "", err
	}
	for _, applet := range []string{"sh", "sleep"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	cmd := []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait; done"}
	data, err := crinode.Archive([]crinode.Image{{Ref: pauseImage, Rootfs: root, Cmd: cmd}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "pause.tar")
	return path, os.WriteFile(path, data, 0o644)
}

// requireStatic fails unless path is an ELF program without an
// interpreter: the pause image holds nothing else to run it with.
func requireStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", path)
		}
	}
	return nil
}

// criConflist is examples/kubernetes.conflist as users have it, with a
// network name, bridge and subnet of the plugin set's own, so that the
// three sets share the node without sharing a bridge or a lease directory.
func criConflist(path string, index int, name string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var list map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	list["name"] = fmt.Sprint(list["name"], "-", name)
	plugins, _ := list["plugins"].([]any)
	for _, p := range plugins {
		if m, _ := p.(map[string]any); m != nil && m["type"] == "bridge" {
			m["bridge"] = fmt.Sprintf("cribench%d", index)
			subnet := fmt.Sprintf("10.244.%d.0/24", 10+index)
			m["ipam"] = map[string]any{"type": "host-local", "ranges": [][]map[string]string{{{"subnet": subnet}}}}
		}
	}
	out, err := json.MarshalIndent(list, "", "  ")
	return string(out), err
}

// checkBinaries fails early when a tool the CRI row runs is missing.
func checkBinaries() error {
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("the CRI row needs %s (Debian's containerd and runc): %w", b, err)
		}
	}
	if !strings.HasPrefix(runtimeVersion(), "1.") {
		return fmt.Errorf("the CRI row drives containerd 1.6 (configuration version 2); containerd --version says %q", runtimeVersion())
	}
	return nil
}

// runtimeVersion is containerd's version, e.g. "1.6.20~ds1".
func runtimeVersion() string {
	out, err := exec.Command("containerd", "--version").Output()
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return ""
	}
	return fields[2]
}
