package bridgechains

import (
	"slices"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/nftrule"
)

// Isolation returns the owner chains and the network chains iso needs.
func Isolation(o fwtypes.Owner, iso *fwtypes.Isolation) []nftchain.Chain {
	var out []nftchain.Chain
	if iso.NoICC {
		out = append(out, iccChains(o, iso)...)
	}
	if iso.Isolate != "" {
		out = append(out, isolateChains(o, iso)...)
	}
	return out
}

// iccChains drop frames between the owner's port and the port of any other
// owner with icc off, and packets routed from the bridge to its addresses.
func iccChains(o fwtypes.Owner, iso *fwtypes.Isolation) []nftchain.Chain {
	port := quote(iso.HostIface)
	oif := &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: nftrule.Reg1}
	from := nftchain.Chain{Table: nftchain.IsoBridge, Name: nftchain.ChainName(nftchain.PrefixICCFrom, o), Rules: []nftchain.Rule{
		nftchain.Build(&nftchain.Elem{Set: "icc_from", Key: port}, nftrule.VmapOf("oifname", "icc_to", oif)),
	}}
	to := nftchain.Chain{Table: nftchain.IsoBridge, Name: nftchain.ChainName(nftchain.PrefixICCTo, o), Rules: []nftchain.Rule{
		nftchain.Build(&nftchain.Elem{Set: "icc_to", Key: port}, nftrule.Drop),
	}}
	out := []nftchain.Chain{from, to}
	routed := nftchain.Chain{Table: nftchain.IsoInet, Name: nftchain.ChainName(nftchain.PrefixICCIP, o)}
	for _, ip := range iso.IPs {
		set := "icc_addrs6"
		if fwtypes.IsV4(ip) {
			set = "icc_addrs4"
		}
		routed.Rules = append(routed.Rules, nftchain.Build(&nftchain.Elem{Set: set, Key: ip.String()},
			nftrule.IfName(true, iso.Bridge, false), nftrule.Drop))
	}
	if len(routed.Rules) > 0 {
		out = append(out, routed)
	}
	return out
}

// isolateChains are the network chains of the owner's bridge and the
// owner's hold on them.
func isolateChains(o fwtypes.Owner, iso *fwtypes.Isolation) []nftchain.Chain {
	br := quote(iso.Bridge)
	fromElem := &nftchain.Elem{Set: "iso_from", Key: br}
	from := nftchain.Chain{Table: nftchain.IsoInet, Name: nftchain.NetChainName(nftchain.PrefixIsoFrom, o)}
	to := nftchain.Chain{Table: nftchain.IsoInet, Name: nftchain.NetChainName(nftchain.PrefixIsoTo, o), Rules: []nftchain.Rule{
		nftchain.Build(&nftchain.Elem{Set: "iso_to", Key: br}, nftrule.Drop),
	}}
	var into *nftchain.Chain
	if iso.Isolate == fwtypes.IsolateStrict {
		from.Rules = append(from.Rules, notAllowed(false, iso, fromElem))
		into = &nftchain.Chain{Table: nftchain.IsoInet, Name: nftchain.NetChainName(nftchain.PrefixIsoInto, o), Rules: []nftchain.Rule{
			notAllowed(true, iso, &nftchain.Elem{Set: "iso_into", Key: br}),
		}}
	}
	from.Rules = append(from.Rules, nftchain.Build(fromElem, nftrule.IfName(false, iso.Bridge, true),
		nftrule.VmapOf("oifname", "iso_to", &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: nftrule.Reg1})))
	shared := []nftchain.Chain{from, to}
	if into != nil {
		shared = append(shared, *into)
	}
	hold := nftchain.Chain{Table: nftchain.IsoInet, Name: nftchain.ChainName(nftchain.PrefixIsoHold, o)}
	for _, c := range shared {
		hold.Rules = append(hold.Rules, nftchain.Build(nil, nftrule.Jump(c.Name)))
	}
	return append(shared, hold)
}

// notAllowed drops what comes in through (iif) or goes out of any
// interface but the bridge and the uplinks.
// Equivalent to: oifname != { "<bridge>", "<uplink>", … } drop
func notAllowed(iif bool, iso *fwtypes.Isolation, elem *nftchain.Elem) nftchain.Rule {
	names := []string{iso.Bridge}
	for _, u := range iso.Uplinks {
		if !slices.Contains(names, u) {
			names = append(names, u)
		}
	}
	word, key := "oifname", expr.MetaKeyOIFNAME
	if iif {
		word, key = "iifname", expr.MetaKeyIIFNAME
	}
	return nftchain.Build(elem, nftrule.NotIn(word, nftrule.Set{Type: "ifname", Items: names},
		&expr.Meta{Key: key, Register: nftrule.Reg1}), nftrule.Drop)
}

func quote(name string) string { return `"` + name + `"` }
