package e2e

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPodman runs a busybox web server with podman's CNI backend on our
// plugins (bridge + host-local, portmap, tuning; cniVersion 1.0.0), fetches
// its page through the host port via 127.0.0.1 and via the bridge gateway,
// stops and starts it (podman's DEL then comes from its cleanup process,
// and ADD again on start), and checks that `podman rm` leaves no veth,
// lease or rule behind.
func TestPodman(t *testing.T) {
	n := newNode(t)
	needTools(t, "podman", "runc", "conmon", "curl")
	rootfs := busyboxRootfs(t)
	n.install(map[string]string{
		"/etc/containers/containers.conf": "testdata/podman/containers.conf",
		"/etc/containers/storage.conf":    "testdata/podman/storage.conf",
		"/etc/containers/policy.json":     "testdata/podman/policy.json",
		"/etc/cni/net.d/e2e.conflist":     "testdata/podman/e2e.conflist",
	})
	if out := n.Must("podman", "network", "ls", "--format", "{{.Name}} {{.Driver}}"); !strings.Contains(out, "e2e bridge") {
		t.Fatalf("podman does not see the e2e network:\n%s", out)
	}

	name := uniqueName("web")
	// --rootfs is a boolean: the root filesystem takes the image's place.
	id := strings.TrimSpace(n.Must("podman", "run", "-d", "--name", name, "--network", "e2e",
		"--cgroup-parent", n.cgroup(name), "-p", "8080:80", "--rootfs", rootfs,
		"/bin/httpd", "-f", "-p", "80", "-h", "/www"))
	t.Cleanup(func() { _, _ = n.Run(time.Minute, "podman", "rm", "-f", "-t", "0", name) }) // after a failure only
	t.Logf("podman run: container %s", id)

	ip := n.podmanServes(name)
	n.fetch("http://10.89.0.1:8080/")
	n.requireAttached(id, ip.String())

	t.Log("podman stop, then start: DEL from the cleanup process, then ADD again")
	n.Must("podman", "stop", "-t", "0", name)
	n.requireClean(id, ip.String())
	n.Must("podman", "start", name)
	ip = n.podmanServes(name)

	n.Must("podman", "rm", "-f", "-t", "0", name)
	// podman's DEL often comes from its separate cleanup process: wait.
	n.requireClean(id, ip.String())
}

// podmanServes checks the running container's address (as the container
// and as podman see it) and the tuning sysctl, fetches its page directly
// and through host port 8080 on 127.0.0.1, and returns the address.
func (n *node) podmanServes(name string) net.IP {
	n.T.Helper()
	pid := strings.TrimSpace(n.Must("podman", "inspect", "--format", "{{.State.Pid}}", name))
	if _, err := strconv.Atoi(pid); err != nil {
		n.T.Fatalf("podman inspect: pid %q", pid)
	}
	ip := n.containerAddr(pid)
	requireIn(n.T, ip, "10.89.0.0/24")
	reported := strings.TrimSpace(n.Must("podman", "inspect", "--format",
		`{{(index .NetworkSettings.Networks "e2e").IPAddress}}`, name))
	if reported != ip.String() {
		n.T.Errorf("podman inspect reports address %q, the container has %s", reported, ip)
	}
	// /proc/sys/net shows the namespace of the process reading it.
	got := strings.TrimSpace(n.Must("nsenter", "--target", pid, "--net", "cat", "/proc/sys/net/ipv4/conf/eth0/arp_notify"))
	if got != "1" {
		n.T.Errorf("arp_notify of eth0 in the container = %q, want 1 (set by tuning)", got)
	}
	n.fetch("http://" + ip.String() + ":80/")
	n.fetch("http://127.0.0.1:8080/")
	return ip
}
