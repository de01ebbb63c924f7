package nftables

import (
	"slices"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/firewall/nftrule"
)

// isolation returns the owner chains and the network chains iso needs.
func isolation(o fwapi.Owner, iso *fwapi.Isolation) []nftmodel.Chain {
	var out []nftmodel.Chain
	if iso.NoICC {
		out = append(out, iccChains(o, iso)...)
	}
	var shared []nftmodel.Chain
	if iso.Isolate != "" {
		shared = append(shared, isolateChains(o, iso)...)
	}
	if iso.FilterIngress {
		shared = append(shared, ingressChain(o, iso))
	}
	if len(shared) == 0 {
		return out
	}
	hold := nftmodel.Chain{Table: nftmodel.IsoInet, Name: nftmodel.ChainName(nftmodel.PrefixIsoHold, o)}
	for _, c := range shared {
		hold.Rules = append(hold.Rules, nftmodel.Build(nil, nftrule.Jump(c.Name)))
	}
	return append(append(out, shared...), hold)
}

// iccChains drop frames between the owner's port and the port of any other
// owner with icc off, and packets routed from the bridge to its addresses.
func iccChains(o fwapi.Owner, iso *fwapi.Isolation) []nftmodel.Chain {
	port := quote(iso.HostIface)
	oif := &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: nftrule.Reg1}
	from := nftmodel.Chain{Table: nftmodel.IsoBridge, Name: nftmodel.ChainName(nftmodel.PrefixICCFrom, o), Rules: []nftmodel.Rule{
		nftmodel.Build(&nftmodel.Elem{Set: "icc_from", Key: port}, nftrule.VmapOf("oifname", "icc_to", oif)),
	}}
	to := nftmodel.Chain{Table: nftmodel.IsoBridge, Name: nftmodel.ChainName(nftmodel.PrefixICCTo, o), Rules: []nftmodel.Rule{
		nftmodel.Build(&nftmodel.Elem{Set: "icc_to", Key: port}, nftrule.Drop),
	}}
	out := []nftmodel.Chain{from, to}
	routed := nftmodel.Chain{Table: nftmodel.IsoInet, Name: nftmodel.ChainName(nftmodel.PrefixICCIP, o)}
	for _, ip := range iso.IPs {
		set := "icc_addrs6"
		if fwapi.IsV4(ip) {
			set = "icc_addrs4"
		}
		routed.Rules = append(routed.Rules, nftmodel.Build(&nftmodel.Elem{Set: set, Key: ip.String()},
			nftrule.IfName(true, iso.Bridge, false), nftrule.Drop))
	}
	if len(routed.Rules) > 0 {
		out = append(out, routed)
	}
	return out
}

// isolateChains are the isolate network chains of the owner's bridge.
func isolateChains(o fwapi.Owner, iso *fwapi.Isolation) []nftmodel.Chain {
	br := quote(iso.Bridge)
	fromElem := &nftmodel.Elem{Set: "iso_from", Key: br}
	from := nftmodel.Chain{Table: nftmodel.IsoInet, Name: nftmodel.NetChainName(nftmodel.PrefixIsoFrom, o)}
	to := nftmodel.Chain{Table: nftmodel.IsoInet, Name: nftmodel.NetChainName(nftmodel.PrefixIsoTo, o), Rules: []nftmodel.Rule{
		nftmodel.Build(&nftmodel.Elem{Set: "iso_to", Key: br}, nftrule.Drop),
	}}
	var into *nftmodel.Chain
	if iso.Isolate == fwapi.IsolateStrict {
		from.Rules = append(from.Rules, notAllowed(false, iso, fromElem))
		into = &nftmodel.Chain{Table: nftmodel.IsoInet, Name: nftmodel.NetChainName(nftmodel.PrefixIsoInto, o), Rules: []nftmodel.Rule{
			notAllowed(true, iso, &nftmodel.Elem{Set: "iso_into", Key: br}),
		}}
	}
	from.Rules = append(from.Rules, nftmodel.Build(fromElem, nftrule.IfName(false, iso.Bridge, true),
		nftrule.VmapOf("oifname", "iso_to", &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: nftrule.Reg1})))
	shared := []nftmodel.Chain{from, to}
	if into != nil {
		shared = append(shared, *into)
	}
	return shared
}

// ingressChain is the network chain of the ingress filter: what is
// forwarded into the bridge from any other interface is dropped. The base
// chain has accepted replies and DNATed connections before (Docker's
// gateway mode "nat").
// Equivalent to: oifname "<bridge>" iifname != "<bridge>" drop
func ingressChain(o fwapi.Owner, iso *fwapi.Isolation) nftmodel.Chain {
	return nftmodel.Chain{Table: nftmodel.IsoInet, Name: nftmodel.NetChainName(nftmodel.PrefixIngress, o), Rules: []nftmodel.Rule{
		nftmodel.Build(&nftmodel.Elem{Set: "ingress", Key: quote(iso.Bridge)}, nftrule.IfName(true, iso.Bridge, true), nftrule.Drop),
	}}
}

// notAllowed drops what comes in through (iif) or goes out of any
// interface but the bridge and the uplinks.
// Equivalent to: oifname != { "<bridge>", "<uplink>", … } drop
func notAllowed(iif bool, iso *fwapi.Isolation, elem *nftmodel.Elem) nftmodel.Rule {
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
	return nftmodel.Build(elem, nftrule.NotIn(word, nftrule.Set{Type: "ifname", Items: names},
		&expr.Meta{Key: key, Register: nftrule.Reg1}), nftrule.Drop)
}

func quote(name string) string { return `"` + name + `"` }
