package nftables

import (
	"fmt"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/test/fwtest"
	"cnisuite/test/golden"
)

func TestNFTEnsureScript(t *testing.T) {
	old := Chains(fwtest.PortOwner, fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil }))
	var existing []nftmodel.Existing
	for _, c := range old {
		e := nftmodel.Existing{Table: c.Table, Name: c.Name}
		for _, r := range c.Rules {
			e.Comments = append(e.Comments, r.Comment())
		}
		existing = append(existing, e)
	}
	tests := []struct {
		name  string
		rules fwapi.Rules
	}{
		{"same", fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })},
		{"port_changed_snat_off", fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.ContainerV6, p.SNAT = nil, false
			p.Mappings = p.Mappings[:1]
			p.Mappings[0].HostPort = 8081
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired := Chains(fwtest.PortOwner, tc.rules)
			golden.Check(t, "nft_update_"+tc.name, nftmodel.Script(desired, existing, skeletons(desired), nil))
		})
	}
	t.Run("remove", func(t *testing.T) {
		golden.Check(t, "nft_remove", removeScript(existing, false))
		golden.Check(t, "nft_remove_safe", removeScript(existing, true))
	})
}

// removeScript renders, as nft commands, the transaction Remove sends as
// a netlink batch: it serves only this test, which
// shows the deletions in readable form. The fast form deletes map elements
// directly; the safe form re-adds each first, so that an element deleted
// behind our back does not fail the transaction (at the price of a full
// validation of the table by the kernel).
func removeScript(existing []nftmodel.Existing, safe bool) string {
	var b strings.Builder
	for _, e := range existing {
		if safe {
			b.WriteString(nftmodel.Script(nil, []nftmodel.Existing{e}, nil, nil))
			continue
		}
		for _, el := range e.Elems() {
			fmt.Fprintf(&b, "delete element %s %s { %s }\n", e.Table, el.Set, el.Key)
		}
		ts := e.Table.String()
		fmt.Fprintf(&b, "flush chain %s %s\ndelete chain %s %s\n", ts, e.Name, ts, e.Name)
	}
	return b.String()
}
