package userns

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
)

func TestMain(m *testing.M) { Main(m) }

// The tests run in a network namespace of their own: it shows only lo,
// up, and a link made here is there, in /sys/class/net too.
func TestOwnNetwork(t *testing.T) {
	Require(t)
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 1 || links[0].Attrs().Name != "lo" || links[0].Attrs().Flags&1 == 0 {
		t.Fatalf("links at start = %v, want lo alone, up", links)
	}
	if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "usernsbr0"}}); err != nil {
		t.Fatalf("ip link add usernsbr0 type bridge: %v", err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName("usernsbr0"); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	if _, err := os.Stat("/sys/class/net/usernsbr0"); err != nil {
		t.Errorf("/sys/class/net does not show the new bridge: %v", err)
	}
	uidMap, _ := os.ReadFile("/proc/self/uid_map")
	if f := strings.Fields(string(uidMap)); len(f) != 3 || f[0] != "0" || f[2] != "1" || os.Getuid() != 0 {
		t.Errorf("uid %d with uid_map %q, want 0 mapped to one user", os.Getuid(), uidMap)
	}
}

// NewNS gives a namespace apart from the tests' own: a link made there is
// not seen here, and the namespace can be entered by its path.
func TestNewNS(t *testing.T) {
	n := NewNS(t)
	if ns.IsOwn(n.Path()) {
		t.Fatalf("NewNS() = %s, the tests' own namespace", n.Path())
	}
	err := ns.Do(n.Path(), func() error {
		return netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "usernsbr1"}})
	})
	if err != nil {
		t.Fatalf("ip -n %s link add usernsbr1 type bridge: %v", n.Path(), err)
	}
	if _, err := netlink.LinkByName("usernsbr1"); err == nil {
		t.Errorf("the bridge made in the new namespace shows in the tests' own")
	}
}

// A process that only claims to be the one Main started, by the variable,
// is refused: it is in its starter's namespace.
func TestChildRefusesParentNetns(t *testing.T) {
	Require(t)
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if err := enter(own); err == nil || !strings.Contains(err.Error(), "is the one of the process that started") {
		t.Errorf("enter(own namespace) = %v, want a refusal", err)
	}
}

// Where no user namespace can be made (here: one with its limit set to
// 0), the tests run in place and skip saying why, or fail under
// CNISUITE_REQUIRE_PRIVILEGED=1.
func TestUnavailableSkips(t *testing.T) {
	Require(t) // the limit is set in a user namespace of this one, never the machine's
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("needs util-linux's unshare: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := `echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" -test.run='^TestOwnNetwork$' -test.v`
	for _, require := range []string{"", "1"} {
		cmd := exec.Command("unshare", "--user", "--map-root-user", "sh", "-c", script, self)
		cmd.Env = append(os.Environ(), "CNISUITE_REQUIRE_PRIVILEGED="+require)
		out, err := cmd.CombinedOutput()
		want := "skipping test in a user namespace: cannot make a user namespace"
		if require == "1" {
			want = "test in a user namespace cannot run: cannot make a user namespace"
		}
		if !strings.Contains(string(out), want) || (err != nil) != (require == "1") {
			t.Errorf("CNISUITE_REQUIRE_PRIVILEGED=%s without user namespaces: %v\n%s\nwant %q", require, err, out, want)
		}
	}
}

// A command the test runs reaches the namespace by its path.
func TestNewNSPathForCommands(t *testing.T) {
	n := NewNS(t)
	if err := n.Do(func() error {
		return netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "usernsbr2"}})
	}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("nsenter", "--net="+n.Path(), "ip", "-br", "link", "show").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "usernsbr2") {
		t.Errorf("nsenter --net=%s ip link show: %v\n%s", n.Path(), err, out)
	}
}

// TestStateDirsAreOwn: what a test writes under a state directory lands in
// a tmpfs of its own, not on the machine's file system.
func TestStateDirsAreOwn(t *testing.T) {
	RequireStateDirs(t)
	for _, d := range StateDirs {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err != nil {
			t.Fatal(err)
		}
		if st.Type != unix.TMPFS_MAGIC {
			t.Errorf("%s is not a tmpfs (type %#x)", d, st.Type)
		}
		if entries, _ := os.ReadDir(d); d != "/run" && len(entries) > 0 {
			t.Errorf("%s holds %d entries, want an empty tmpfs", d, len(entries))
		}
	}
	if err := os.WriteFile("/run/cnisuite-userns-probe", []byte("x"), 0o644); err != nil {
		t.Fatalf("writing under /run: %v", err)
	}
}
