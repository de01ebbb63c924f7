package natchain

import (
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/test/fwtest"
)

// TestEnsurePayloadRepairsJumps: over existing chains, the payload adds
// the jumps present reports missing and deletes none of them (a -D of a
// missing rule fails the whole payload), and otherwise adds or deletes
// jumps by the difference of the old and new sources alone.
func TestEnsurePayloadRepairsJumps(t *testing.T) {
	masq := func(addrs ...string) fwapi.Rules {
		var r fwapi.Rules
		for _, a := range addrs {
			r.Masq = append(r.Masq, fwapi.Masq{Addr: *fwtest.CIDR(t, a)})
		}
		return r
	}
	bo, po := fwtest.BridgeOwner, fwtest.PortOwner
	pr := fwtest.PortRules(t, func(*fwapi.PortMaps) {})
	mq := ChainName(PrefixMasq, bo)
	missing := func(parent, src string) func(Jump) bool {
		return func(j Jump) bool { return !(j.Parent == parent && (src == "" || j.Rule[1] == src)) }
	}
	tests := []struct {
		name      string
		o         fwapi.Owner
		old, new  fwapi.Rules
		present   func(Jump) bool
		want, not []string
	}{
		{"all_present", po, pr, pr, nil, nil, []string{"-A OUTPUT", "-A PREROUTING", "-D "}},
		{"output_missing", po, pr, pr, missing("OUTPUT", ""), []string{"-A OUTPUT "}, []string{"-A PREROUTING", "-D "}},
		{"moved_old_missing", bo, masq("10.88.0.2/16"), masq("10.88.0.3/16"), missing("POSTROUTING", "10.88.0.2/32"),
			[]string{"-A POSTROUTING -s 10.88.0.3/32 "}, []string{"-D "}},
		{"moved_old_present", bo, masq("10.88.0.2/16"), masq("10.88.0.3/16"), nil,
			[]string{"-A POSTROUTING -s 10.88.0.3/32 ", "-D POSTROUTING -s 10.88.0.2/32 "}, nil},
		{"dropped_jump_missing", bo, masq("10.88.0.2/16"), fwapi.Rules{}, missing("POSTROUTING", ""),
			[]string{"-F " + mq + "\n-X " + mq}, []string{"-D "}},
		{"dropped", bo, masq("10.88.0.2/16"), fwapi.Rules{}, nil,
			[]string{"-D POSTROUTING -s 10.88.0.2/32 ", "-F " + mq + "\n-X " + mq}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			existing := map[string][]string{}
			for _, c := range Desired(tc.o, tc.old, true) {
				existing[c.Name] = Sources(c.Rules)
			}
			existing = WithCompanions(tc.o, existing)
			got := EnsurePayload(tc.o, Desired(tc.o, tc.new, true), existing, tc.present)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("payload lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("payload holds %q:\n%s", n, got)
				}
			}
		})
	}
}
