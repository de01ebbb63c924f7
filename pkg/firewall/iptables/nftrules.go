package iptables

import (
	"cnisuite/pkg/firewall/bridgechains"
	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/nftchain"
)

// NFTChains returns the owner's chains that iptables cannot express and
// nftables writes instead, with the skeletons of their tables: the spoof
// check and the isolation, which need the bridge family (and, for
// isolation, one rule set for both IP families).
func NFTChains(o fwtypes.Owner, r fwtypes.Rules) ([]nftchain.Chain, []nftchain.Skeleton) {
	var chains []nftchain.Chain
	var skels []nftchain.Skeleton
	if r.SpoofCheck != nil {
		chains = append(chains, bridgechains.SpoofCheck(o, r.SpoofCheck))
		skels = append(skels, bridgechains.SpoofSkeleton())
	}
	if r.Isolation != nil {
		if iso := bridgechains.Isolation(o, r.Isolation); len(iso) > 0 {
			chains = append(chains, iso...)
			skels = append(skels, bridgechains.IsolationSkeletons()...)
		}
	}
	return chains, skels
}

// NFTScript returns the nft script writing NFTChains on a node with none
// of them yet ("" when there are none): what golden files hold.
func NFTScript(o fwtypes.Owner, r fwtypes.Rules) string {
	chains, skels := NFTChains(o, r)
	if len(chains) == 0 {
		return ""
	}
	return nftchain.Script(chains, nil, skels, nil)
}
