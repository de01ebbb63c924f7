package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"cnisuite/test/nodens"
)

// needTools fails the test, naming the install script, when a runtime's
// programs are missing.
func needTools(t testing.TB, names ...string) {
	t.Helper()
	var missing []string
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%v not installed: run scripts/install-e2e-deps.sh", missing)
	}
}

// uniqueName gives containers names no other run shares: runtimes name
// cgroups after them, and cgroups are the machine's.
func uniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return prefix + "-" + hex.EncodeToString(b)
}

// install copies files of testdata to the node: node path → testdata path.
func (n *node) install(files map[string]string) {
	n.T.Helper()
	for dst, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			n.T.Fatal(err)
		}
		n.WriteFile(dst, data, 0o644)
	}
}

// fetch gets url with curl from the node's own namespace until it answers
// with the page the containers serve (the server may still be starting).
func (n *node) fetch(url string) { n.T.Helper(); n.fetchWithin(url, 20*time.Second) }

// fetchWithin is fetch, trying for at most timeout; it reports whether the
// page came.
func (n *node) fetchWithin(url string, timeout time.Duration) bool {
	n.T.Helper()
	var last string
	ok := nodens.WaitFor(timeout, func() bool {
		out, err := n.Run(10*time.Second, "curl", "-sS", "--max-time", "3", url)
		last = out
		if err != nil {
			last = err.Error()
		}
		return err == nil && out == page
	})
	if !ok {
		n.T.Errorf("GET %s = %q, want %q", url, last, page)
		return false
	}
	n.T.Logf("GET %s: %q", url, strings.TrimSpace(last))
	return true
}

// containerAddr returns the IPv4 address of eth0 in the network namespace
// of process pid, as the container sees it.
func (n *node) containerAddr(pid string) net.IP {
	n.T.Helper()
	out := n.Must("nsenter", "--target", pid, "--net", "ip", "-4", "-o", "addr", "show", "dev", "eth0")
	fields := strings.Fields(out)
	for i, f := range fields {
		if f == "inet" && i+1 < len(fields) {
			if ip, _, err := net.ParseCIDR(fields[i+1]); err == nil {
				return ip
			}
		}
	}
	n.T.Fatalf("no IPv4 address on eth0 of the container:\n%s", out)
	return nil
}

// requireIn fails the test unless ip lies in cidr.
func requireIn(t testing.TB, ip net.IP, cidr string) {
	t.Helper()
	_, subnet, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatal(err)
	}
	if !subnet.Contains(ip) {
		t.Fatalf("container address %s not in %s", ip, cidr)
	}
}
