package nftables

import (
	"context"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/test/fwtest"
	"cnisuite/test/golden"
	"cnisuite/test/sandbox"
)

// TestFormatKernelNFTables pins what the nftables backend leaves in the
// kernel for a typical node (docs/formats.md, "nftables"), as `nft list
// ruleset` shows it: a bridge attachment with masquerade and a spoof
// check, an isolated one with icc off and an ingress filter, a portmap
// attachment on the data maps and one with user conditions (a chain of
// rules behind the verdict maps, and the interval maps and chains a range
// with conditions adds). Handles are left out and the elements of
// a set sorted (fwtest.Listing): both follow the order of writes, not
// what is written.
func TestFormatKernelNFTables(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	isolated := fwtest.BridgeOwner
	isolated.Network, isolated.ContainerID = "net2", "ctr2"
	conds := fwtest.PortOwner
	conds.Network, conds.ContainerID = "net3", "ctr3"
	owners := []fwtest.Case{
		{Name: "bridge", Owner: fwtest.BridgeOwner, Rules: fwtest.BridgeRules(t)},
		{Name: "isolated", Owner: isolated, Rules: fwtest.IsolationRules(func(i *fwapi.Isolation) {
			i.Bridge, i.HostIface, i.NoICC, i.Isolate, i.FilterIngress = "cni2", "veth5678", true, fwapi.IsolateOn, true
		})},
		{Name: "portmap", Owner: fwtest.PortOwner, Rules: fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.Mappings = append(p.Mappings, fwapi.PortMapping{HostPort: 9000, ContainerPort: 9000, Protocol: "tcp", Range: 10})
		})},
		{Name: "conditions", Owner: conds, Rules: fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.ContainerV4, p.ContainerV6 = fwtest.CIDR(t, "10.89.0.3/16"), nil
			p.Mappings = []fwapi.PortMapping{{HostPort: 8443, ContainerPort: 443, Protocol: "tcp"},
				{HostPort: 7000, ContainerPort: 7000, Protocol: "udp", Range: 5}}
			p.ConditionsV4 = []string{"ip", "saddr", "!=", "192.0.2.0/24"}
		})},
	}
	fwtest.InNS(t, func() {
		b := New()
		for _, c := range owners {
			if err := b.Ensure(ctx, c.Owner, c.Rules); err != nil {
				t.Fatalf("Ensure(%s): %v", c.Name, err)
			}
		}
		golden.Check(t, "format_kernel_nftables", fwtest.Listing(t))
	})
}
