package iptables

import (
	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftables"
	"cnisuite/pkg/firewall/nftmodel"
)

// NFTChains returns the owner's chains that iptables cannot express and
// nftables writes instead, with the skeletons of their tables: the spoof
// check and the isolation, which need the bridge family (and, for
// isolation, one rule set for both IP families).
func NFTChains(o fwapi.Owner, r fwapi.Rules) ([]nftmodel.Chain, []nftmodel.Skeleton) {
	var chains []nftmodel.Chain
	var skels []nftmodel.Skeleton
	if r.SpoofCheck != nil {
		chains = append(chains, nftables.SpoofCheck(o, r.SpoofCheck))
		skels = append(skels, nftables.SpoofSkeleton())
	}
	if r.Isolation != nil {
		if iso := nftables.Isolation(o, r.Isolation); len(iso) > 0 {
			chains = append(chains, iso...)
			skels = append(skels, nftables.IsolationSkeletons()...)
		}
	}
	return chains, skels
}

// NFTScript returns the nft script writing NFTChains on a node with none
// of them yet ("" when there are none): what golden files hold.
func NFTScript(o fwapi.Owner, r fwapi.Rules) string {
	chains, skels := NFTChains(o, r)
	if len(chains) == 0 {
		return ""
	}
	return nftmodel.Script(chains, nil, skels, nil)
}
