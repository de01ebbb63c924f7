package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"cnisuite/test/nodens"
)

const containerdSock = "/run/containerd/containerd.sock"

// TestContainerd runs a busybox web server with `ctr run --cni` on our
// plugins (bridge + host-local, portmap with a static runtimeConfig since
// ctr has no -p; cniVersion 1.0.0), fetches its page through the mapping,
// kills the task — ctr then sends DEL with the netns already gone — and
// checks that nothing is left behind.
func TestContainerd(t *testing.T) {
	n := newNode(t)
	needTools(t, "containerd", "ctr", "containerd-shim-runc-v2", "runc", "curl")
	rootfs := busyboxRootfs(t)
	n.install(map[string]string{
		"/run/e2e/containerd.toml":       "testdata/containerd/config.toml",
		"/etc/cni/net.d/10-e2e.conflist": "testdata/containerd/10-e2e.conflist",
	})
	n.startContainerd()

	id := uniqueName("web")
	run := n.Start("ctr", "--address", containerdSock, "run", "--rm", "--cni",
		"--cgroup", n.cgroup(id)+"/"+id, "--rootfs", rootfs, id, "/bin/httpd", "-f", "-p", "80", "-h", "/www")
	t.Cleanup(func() {
		if !run.Exited() { // after a failure only
			_, _ = n.Run(time.Minute, "ctr", "--address", containerdSock, "task", "kill", "-s", "SIGKILL", id)
			run.Wait(time.Minute)
		}
	})
	ip := n.containerAddr(n.taskPid(id, run))
	requireIn(t, ip, "10.90.0.0/24")

	n.fetch("http://127.0.0.1:8081/")
	n.fetch("http://10.90.0.1:8081/")
	n.fetch("http://" + ip.String() + ":80/")

	n.requireAttached("default-"+id, ip.String())
	n.Must("ctr", "--address", containerdSock, "task", "kill", "-s", "SIGKILL", id)
	if !run.Wait(time.Minute) {
		t.Fatalf("ctr run still running a minute after its task was killed:\n%s", run.Output())
	}
	t.Logf("ctr run after the kill: %v\n%s", run.Err(), run.Output())
	// ctr names the attachment <namespace>-<id>.
	n.requireClean("default-"+id, ip.String())
	if out := n.Must("ctr", "--address", containerdSock, "containers", "ls", "-q"); strings.Contains(out, id) {
		t.Errorf("ctr run --rm left container %s", id)
	}
}

// startContainerd starts containerd inside the node (stopped, by PID, when
// the test ends) and waits until it answers.
func (n *node) startContainerd() {
	n.T.Helper()
	d := n.Start("containerd", "--config", "/run/e2e/containerd.toml")
	ok := nodens.WaitFor(30*time.Second, func() bool {
		_, err := n.Run(10*time.Second, "ctr", "--address", containerdSock, "version")
		return err == nil || d.Exited()
	})
	if !ok || d.Exited() {
		n.T.Fatalf("containerd did not answer on %s:\n%s", containerdSock, d.Output())
	}
}

// taskPid waits until the task runs and returns its PID.
func (n *node) taskPid(id string, run *nodens.Daemon) string {
	n.T.Helper()
	var pid int
	ok := nodens.WaitFor(60*time.Second, func() bool {
		if run.Exited() {
			return true
		}
		ls, err := n.Run(10*time.Second, "ctr", "--address", containerdSock, "task", "ls")
		if err != nil {
			return false
		}
		for _, line := range strings.Split(ls, "\n") {
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == id && f[2] == "RUNNING" {
				pid, _ = strconv.Atoi(f[1])
				return pid > 0
			}
		}
		return false
	})
	if !ok || pid == 0 {
		n.T.Fatalf("task %s not running; ctr run says (%v):\n%s", id, run.Err(), run.Output())
	}
	return strconv.Itoa(pid)
}
