package ethconf

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/ethtool"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/types"
	"cnisuite/test/userns"
)

// The tests run as root of a user namespace of their own (test/userns),
// as root or not: the veths they tune are in namespaces of the tests' own.
func TestMain(m *testing.M) { userns.Main(m) }

// queuesNS is a fresh namespace holding the veth eth0 (peer p0) with four
// RX and four TX queues, as tuning finds a container's interface.
func queuesNS(t *testing.T) *ns.NetNS {
	t.Helper()
	n := userns.NewNS(t)
	err := n.Do(func() error {
		return netlink.LinkAdd(&netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: "eth0", NumTxQueues: 4, NumRxQueues: 4},
			PeerName:  "p0", PeerNumTxQueues: 4, PeerNumRxQueues: 4,
		})
	})
	if err != nil {
		t.Fatalf("ip link add eth0 numtxqueues 4 numrxqueues 4 type veth peer p0: %v", err)
	}
	return n
}

// ethtoolIn runs the ethtool binary, a reader independent of this
// package, in n and returns its output.
func ethtoolIn(t *testing.T, n *ns.NetNS, args ...string) string {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--net=" + n.Path(), "ethtool"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ethtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// setting returns what ethtool prints after "name:" on the first line
// that starts with it (indented or not) in out, after the heading after
// when it is not "" (ethtool -l prints the maximums first).
func setting(out, after, name string) string {
	if after != "" {
		_, out, _ = strings.Cut(out, after)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "(none)"
}

// wantSettings fails the test unless ethtool's output out shows each
// name: value of want (after the heading after).
func wantSettings(t *testing.T, what, out, after string, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := setting(out, after, name); got != v {
			t.Errorf("%s: %s is %q, want %q\n%s", what, name, got, v, out)
		}
	}
}

func u32(n uint32) *uint32 { return &n }

// do runs fn in n, failing the test on its error.
func do(t *testing.T, n *ns.NetNS, fn func() error) {
	t.Helper()
	if err := n.Do(fn); err != nil {
		t.Fatal(err)
	}
}

// TestPlanApplyCheckRestore: the plan's changes set the offloads and
// queue counts ethtool then shows; Check finds no drift, and names the
// one a user makes by hand; Restore of the originals, and the changes'
// own undo, bring back what ethtool showed before.
func TestPlanApplyCheckRestore(t *testing.T) {
	n := queuesNS(t)
	beforeK, beforeL := ethtoolIn(t, n, "-k", "eth0"), ethtoolIn(t, n, "-l", "eth0")
	wantSettings(t, "ethtool -k before", beforeK, "", map[string]string{"tx-checksumming": "on", "generic-receive-offload": "off"})
	s := Settings{
		Features: []Request{{"tx-checksumming", false}, {"rx-gro", true}},
		Channels: ethtool.ChannelCounts{RX: u32(2), TX: u32(3)},
	}
	var plan *Plan
	do(t, n, func() (err error) { plan, err = NewPlan(s, "eth0"); return err })
	defer plan.Close()
	changes := plan.Changes()
	if len(changes) != 2 {
		t.Fatalf("Changes() = %d changes, want 2 (features, channels)", len(changes))
	}
	for _, c := range changes {
		do(t, n, c.Apply)
	}
	wantSettings(t, "ethtool -k after the changes", ethtoolIn(t, n, "-k", "eth0"), "",
		map[string]string{"tx-checksumming": "off", "tx-checksum-ip-generic": "off", "generic-receive-offload": "on"})
	wantSettings(t, "ethtool -l after the changes", ethtoolIn(t, n, "-l", "eth0"), "Current hardware settings:",
		map[string]string{"RX": "2", "TX": "3"})

	var drifts []string
	do(t, n, func() (err error) { drifts, err = Check(s, "eth0"); return err })
	if len(drifts) != 0 {
		t.Errorf("Check() right after the changes = %q, want none", drifts)
	}
	ethtoolIn(t, n, "-K", "eth0", "gro", "off")
	ethtoolIn(t, n, "-L", "eth0", "rx", "1")
	do(t, n, func() (err error) { drifts, err = Check(s, "eth0"); return err })
	want := []string{`features "rx-gro": rx-gro of "eth0" is off, want on`, `channels.rx of "eth0" is 1, want 2`}
	if strings.Join(drifts, "\n") != strings.Join(want, "\n") {
		t.Errorf("Check() after ethtool -K gro off -L rx 1 = %q, want %q", drifts, want)
	}

	features, channels := plan.Originals()
	do(t, n, func() error { return Restore(features, channels, "eth0") })
	if k, l := ethtoolIn(t, n, "-k", "eth0"), ethtoolIn(t, n, "-l", "eth0"); k != beforeK || l != beforeL {
		t.Errorf("after Restore ethtool shows\n%s\n%s\nwant, as before,\n%s\n%s", k, l, beforeK, beforeL)
	}
	for _, c := range changes {
		do(t, n, c.Apply)
	}
	for i := len(changes) - 1; i >= 0; i-- {
		do(t, n, changes[i].Undo)
	}
	if k, l := ethtoolIn(t, n, "-k", "eth0"), ethtoolIn(t, n, "-l", "eth0"); k != beforeK || l != beforeL {
		t.Errorf("after the changes' undo ethtool shows\n%s\n%s\nwant, as before,\n%s\n%s", k, l, beforeK, beforeL)
	}
}

// TestPlanRefuses: what the veth's driver cannot do is refused as an
// invalid configuration naming the key and value, before anything
// changes (NewPlan), or, for a feature the kernel keeps the other way
// because of another, when applied, which then puts back what it changed.
func TestPlanRefuses(t *testing.T) {
	tests := []struct {
		name    string
		s       Settings
		atApply bool
		want    string
	}{
		{"unknown_feature", Settings{Features: []Request{{"tx-no-such-thing", true}}}, false,
			`features "tx-no-such-thing": the kernel has no such feature`},
		{"fixed_feature", Settings{Features: []Request{{"loopback", true}}}, false,
			`features "loopback": true: the driver of "eth0" has loopback fixed off`},
		{"group_all_fixed", Settings{Features: []Request{{"large-receive-offload", true}}}, false,
			`features "large-receive-offload": true: the driver of "eth0" has all 1 of its features (rx-lro) fixed off`},
		{"channels_above_max", Settings{Channels: ethtool.ChannelCounts{RX: u32(9)}}, false,
			`channels.rx 9: above the maximum of "eth0", 4`},
		{"channels_kind_missing", Settings{Channels: ethtool.ChannelCounts{Combined: u32(1)}}, false,
			`channels.combined 1: the driver of "eth0" has no combined channels`},
		{"kept_by_another", Settings{Features: []Request{{"tx-checksumming", false}, {"tx-tcp-segmentation", true}}}, true,
			`features "tx-tcp-segmentation": true: the kernel keeps tx-tcp-segmentation of "eth0" off, as other features require`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := queuesNS(t)
			beforeK, beforeL := ethtoolIn(t, n, "-k", "eth0"), ethtoolIn(t, n, "-l", "eth0")
			var err error
			_ = n.Do(func() error {
				var plan *Plan
				plan, err = NewPlan(tt.s, "eth0")
				if err != nil || !tt.atApply {
					plan.Close() // nil after an error
					return nil
				}
				defer plan.Close()
				for _, c := range plan.Changes() {
					if err = c.Apply(); err != nil {
						return nil
					}
				}
				return nil
			})
			if err == nil || types.Code(err) != types.CodeInvalidConfig || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v (code %d), want code 7 containing %q", err, types.Code(err), tt.want)
			}
			if k, l := ethtoolIn(t, n, "-k", "eth0"), ethtoolIn(t, n, "-l", "eth0"); k != beforeK || l != beforeL {
				t.Errorf("after the refusal ethtool shows\n%s\n%s\nwant, as before,\n%s\n%s", k, l, beforeK, beforeL)
			}
		})
	}
}

// TestEmptySettings: settings that ask for nothing plan, check and
// restore nothing, without opening the ethtool family.
func TestEmptySettings(t *testing.T) {
	plan, err := NewPlan(Settings{}, "eth0")
	if plan != nil || err != nil {
		t.Errorf("NewPlan(empty) = %v, %v; want nil, nil", plan, err)
	}
	if c := plan.Changes(); c != nil {
		t.Errorf("nil plan's Changes() = %v", c)
	}
	if f, c := plan.Originals(); f != nil || c != (ethtool.ChannelCounts{}) {
		t.Errorf("nil plan's Originals() = %v, %v", f, c)
	}
	plan.Close()
	if d, err := Check(Settings{}, "eth0"); d != nil || err != nil {
		t.Errorf("Check(empty) = %v, %v", d, err)
	}
	if err := Restore(nil, ethtool.ChannelCounts{}, "eth0"); err != nil {
		t.Errorf("Restore(nothing) = %v", err)
	}
}

// TestMissingInterface: an interface that is gone is an I/O failure, not
// a configuration the user must change.
func TestMissingInterface(t *testing.T) {
	n := userns.NewNS(t)
	s := Settings{Features: []Request{{"rx-gro", true}}, Channels: ethtool.ChannelCounts{RX: u32(1)}}
	var errs []error
	_ = n.Do(func() error {
		_, err := NewPlan(s, "eth9")
		errs = append(errs, err)
		_, err = Check(s, "eth9")
		errs = append(errs, err)
		return nil
	})
	for i, err := range errs {
		if err == nil || types.Code(err) == types.CodeInvalidConfig {
			t.Errorf("call %d on a missing interface = %v (code %d), want an error that is not code 7", i, err, types.Code(err))
		}
	}
}
