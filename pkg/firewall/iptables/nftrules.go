package iptables

import (
	"cnisuite/pkg/firewall/fwtypes"
	"cnisuite/pkg/firewall/isolation"
	"cnisuite/pkg/firewall/nftchain"
	"cnisuite/pkg/firewall/spoofcheck"
)

// NFTChains returns the owner's chains that iptables cannot express and
// nftables writes instead, with the skeletons of their tables: the spoof
// check and the isolation, which need the bridge family (and, for
// isolation, one rule set for both IP families).
func NFTChains(o fwtypes.Owner, r fwtypes.Rules) ([]nftchain.Chain, []nftchain.Skeleton) {
	var chains []nftchain.Chain
	var skels []nftchain.Skeleton
	if r.SpoofCheck != nil {
		chains = append(chains, spoofcheck.Chain(o, r.SpoofCheck))
		skels = append(skels, spoofcheck.Skeleton())
	}
	if r.Isolation != nil {
		if iso := isolation.Chains(o, r.Isolation); len(iso) > 0 {
			chains = append(chains, iso...)
			skels = append(skels, isolation.Skeletons()...)
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
