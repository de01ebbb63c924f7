package e2e

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criDaemonKilled kills the runtime with SIGKILL while two pods run, takes
// one pod's network namespace away meanwhile (its pause process killed, if
// it has one, and its pin removed: as after a crash), and starts the
// runtime again: the surviving pod still serves, and StopPodSandbox cleans
// up after both — DEL with the namespace there and DEL with it gone.
func criDaemonKilled(n *criNode) {
	n.useCRI(n.flavor.binDir(), criConfDir)
	cfg := podConfig(uniqueName("survivor"), n.cgroupParent)
	cfg.PortMappings = []*cri.PortMapping{{Protocol: cri.Protocol_TCP, ContainerPort: 80, HostPort: 18083}}
	survivor := n.mustRunPod(cfg, "/bin/httpd", "-f", "-p", "80", "-h", "/www")
	orphan := n.mustRunPod(podConfig(uniqueName("orphan"), n.cgroupParent))
	n.requireAttached(survivor.id, survivor.ips[0])
	n.requireAttached(orphan.id, orphan.ips[0])

	n.killCRI()
	n.orphanPod(orphan)
	n.startCRI(n.binDir, n.confDir)

	n.fetch(fmt.Sprintf("http://%s:80/", survivor.ips[0]))
	n.fetch(fmt.Sprintf("http://%s:18083/", nodeAddr))
	for _, p := range []*criPod{survivor, orphan} {
		if err := n.stopAndRemove(p); err != nil {
			n.T.Fatalf("after %s's restart: %v", n.flavor.name(), err)
		}
	}
	n.requirePodsGone(survivor, orphan)
}

// orphanPod takes a pod's network namespace away while its runtime is
// down, as a crash of the node would: its pause process (if the runtime
// runs one) is killed and its pin unmounted and removed.
func (n *criNode) orphanPod(p *criPod) {
	n.T.Helper()
	pausePid, netnsPath := p.pausePid, p.netnsPath
	n.T.Logf("%s killed; removing pod %s's netns %s (pause process: %d, 0 for none)", n.flavor.name(), p.name, netnsPath, pausePid)
	if pausePid > 0 {
		if err := syscall.Kill(pausePid, syscall.SIGKILL); err != nil {
			n.T.Fatalf("killing pause process %d: %v", pausePid, err)
		}
	}
	n.Must("umount", runPath(netnsPath))
	if err := os.Remove(n.Path(runPath(netnsPath))); err != nil {
		n.T.Fatal(err)
	}
}

// criArgs runs a pod with a wrapper around each plugin in the CNI bin dir
// that records CNI_ARGS and drops the IgnoreUnknown key containerd adds:
// every plugin gets the K8S_POD_* keys on ADD and DEL and accepts them
// without IgnoreUnknown (pod start and stop succeed).
func criArgs(n *criNode) {
	n.useCRI(recorderDir, criConfDir)
	if err := os.WriteFile(n.Path(recorderLog), nil, 0o644); err != nil {
		n.T.Fatal(err)
	}
	cfg := podConfig(uniqueName("args"), n.cgroupParent)
	cfg.PortMappings = []*cri.PortMapping{{Protocol: cri.Protocol_TCP, ContainerPort: 80, HostPort: 18084}}
	p := n.mustRunPod(cfg)
	if err := n.stopAndRemove(p); err != nil {
		n.T.Fatal(err)
	}
	n.requirePodsGone(p)
	data, err := os.ReadFile(n.Path(recorderLog))
	if err != nil {
		n.T.Fatal(err)
	}
	n.T.Logf("CNI calls recorded:\n%s", data)
	want := []string{
		"K8S_POD_NAMESPACE=e2e", "K8S_POD_NAME=" + p.name,
		"K8S_POD_INFRA_CONTAINER_ID=" + p.id, "K8S_POD_UID=uid-" + p.name,
	}
	for _, plugin := range []string{"loopback", "bridge", "host-local", "portmap"} {
		for _, verb := range []string{"ADD", "DEL"} {
			if problem := argsProblem(string(data), plugin, verb, want); problem != "" {
				n.T.Errorf("%s %s: %s", plugin, verb, problem)
			}
		}
	}
}

// argsProblem checks the recorded calls of one plugin and verb: at least
// one, each sent every wanted key and passed them on without
// IgnoreUnknown. It returns what is wrong, or "".
func argsProblem(log, plugin, verb string, want []string) string {
	calls := 0
	for _, line := range strings.Split(log, "\n") {
		rest, ok := strings.CutPrefix(line, plugin+" "+verb+" sent=")
		if !ok {
			continue
		}
		calls++
		sent, passed, _ := strings.Cut(rest, " passed=")
		for _, key := range want {
			if !strings.Contains(";"+sent+";", ";"+key+";") {
				return fmt.Sprintf("containerd sent CNI_ARGS %q without %s", sent, key)
			}
			if !strings.Contains(";"+passed+";", ";"+key+";") {
				return fmt.Sprintf("the plugin got CNI_ARGS %q without %s", passed, key)
			}
		}
		if strings.Contains(passed, "IgnoreUnknown") {
			return fmt.Sprintf("the plugin got IgnoreUnknown in %q", passed)
		}
	}
	if calls == 0 {
		return "never called"
	}
	return ""
}
