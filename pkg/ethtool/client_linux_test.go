package ethtool

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ns"
	"cnisuite/test/userns"
)

// The tests run as root of a user namespace of their own, with a network
// namespace of its own (test/userns), as root or not.
func TestMain(m *testing.M) { userns.Main(m) }

// vethNS makes a namespace holding the veth pair et0/et1, four queues
// each way, and returns it.
func vethNS(t *testing.T) *ns.NetNS {
	t.Helper()
	n := userns.NewNS(t)
	err := n.Do(func() error {
		return netlink.LinkAdd(&netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: "et0", NumTxQueues: 4, NumRxQueues: 4},
			PeerName:  "et1",
		})
	})
	if err != nil {
		t.Fatalf("ip link add et0 numtxqueues 4 numrxqueues 4 type veth peer et1: %v", err)
	}
	return n
}

// ethtoolShows runs the ethtool binary, an independent reader, in n with
// args and returns its output.
func ethtoolShows(t *testing.T, n *ns.NetNS, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Fatalf("the ethtool binary, this test's independent reader, is missing (make deps installs it): %v", err)
	}
	out, err := exec.Command("nsenter", append([]string{"--net=" + n.Path(), "ethtool"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ethtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// inNS dials a client in n and runs fn with it.
func inNS(t *testing.T, n *ns.NetNS, fn func(c *Client) error) {
	t.Helper()
	err := n.Do(func() error {
		c, err := Dial()
		if err != nil {
			return err
		}
		defer c.Close()
		return fn(c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFeatures(t *testing.T) {
	n := vethNS(t)
	var f *Features
	inNS(t, n, func(c *Client) (err error) { f, err = c.Features("et0"); return err })
	tests := []Feature{
		{Name: "tx-checksum-ip-generic", Changeable: true, Wanted: true, Active: true},
		{Name: "tx-checksum-ipv4"},
		{Name: "rx-gro", Changeable: true},
	}
	for _, want := range tests {
		if got, ok := f.Lookup(want.Name); !ok || got != want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v (veth's defaults)", want.Name, got, ok, want)
		}
	}
	if _, ok := f.Lookup("tx-checksumming"); ok {
		t.Errorf("Lookup(%q) found ethtool's group name among the kernel's", "tx-checksumming")
	}

	off := []Feature{{Name: "tx-checksum-ip-generic"}, {Name: "rx-gro", Wanted: true}}
	inNS(t, n, func(c *Client) error { return c.SetFeatures("et0", off) })
	shown := ethtoolShows(t, n, "-k", "et0")
	lines := map[string]bool{}
	for _, l := range strings.Split(shown, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	// ethtool prints rx-gro under its group name.
	for _, line := range []string{"tx-checksum-ip-generic: off", "generic-receive-offload: on", "tx-checksum-sctp: on"} {
		if !lines[line] {
			t.Errorf("ethtool -k et0 after SetFeatures(%+v) lacks the line %q:\n%s", off, line, shown)
		}
	}
	inNS(t, n, func(c *Client) (err error) { f, err = c.Features("et0"); return err })
	if got, _ := f.Lookup("tx-checksum-ip-generic"); got.Active || got.Wanted {
		t.Errorf("Features after turning tx-checksum-ip-generic off: %+v", got)
	}
	// Without checksumming the kernel turns TCP segmentation off too,
	// though it stays wanted.
	if got, _ := f.Lookup("tx-tcp-segmentation"); got.Active || !got.Wanted {
		t.Errorf("tx-tcp-segmentation with checksumming off = %+v, want wanted but not active", got)
	}
}

func TestSetFeaturesUnknown(t *testing.T) {
	n := vethNS(t)
	inNS(t, n, func(c *Client) error {
		err := c.SetFeatures("et0", []Feature{{Name: "no-such-feature"}})
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "bit name not found") {
			t.Errorf("SetFeatures(no-such-feature) = %v, want ErrNotSupported with the kernel's words", err)
		}
		_, err = c.Features("nosuch0")
		if err == nil {
			t.Errorf("Features(nosuch0) = nil error")
		}
		return nil
	})
}

func TestChannels(t *testing.T) {
	n := vethNS(t)
	var ch Channels
	inNS(t, n, func(c *Client) (err error) { ch, err = c.Channels("et0"); return err })
	if want := (Channels{RX: 4, TX: 4, MaxRX: 4, MaxTX: 4}); ch != want {
		t.Errorf("Channels(et0) = %+v, want %+v", ch, want)
	}
	two, three := uint32(2), uint32(3)
	inNS(t, n, func(c *Client) error { return c.SetChannels("et0", ChannelCounts{RX: &two, TX: &three}) })
	shown := ethtoolShows(t, n, "-l", "et0")
	current := shown[strings.Index(shown, "Current"):]
	if !strings.Contains(current, "RX:\t\t2\n") || !strings.Contains(current, "TX:\t\t3\n") {
		t.Errorf("ethtool -l et0 after SetChannels(rx 2, tx 3):\n%s", shown)
	}
	nine := uint32(9)
	inNS(t, n, func(c *Client) error {
		err := c.SetChannels("et0", ChannelCounts{RX: &nine})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "exceeds maximum") {
			t.Errorf("SetChannels(rx 9) = %v, want ErrRefused with the kernel's words", err)
		}
		return nil
	})
	if again := ethtoolShows(t, n, "-l", "et0"); again != shown {
		t.Errorf("ethtool -l et0 after a refused SetChannels changed:\n%s\nwas:\n%s", again, shown)
	}
}
