package nftables

import (
	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
)

// BridgeChains returns the owner's chains that iptables cannot express,
// with the skeletons of their tables: the spoof check and the isolation,
// which need the bridge family (and, for isolation, one rule set for both
// IP families). The iptables backend writes them with nftables.
func BridgeChains(o fwapi.Owner, r fwapi.Rules) ([]nftmodel.Chain, []nftmodel.Skeleton) {
	var chains []nftmodel.Chain
	var skels []nftmodel.Skeleton
	if r.SpoofCheck != nil {
		chains = append(chains, spoofCheck(o, r.SpoofCheck))
		skels = append(skels, spoofSkeleton())
	}
	if r.Isolation != nil {
		if iso := isolation(o, r.Isolation); len(iso) > 0 {
			chains = append(chains, iso...)
			skels = append(skels, isolationSkeletons()...)
		}
	}
	return chains, skels
}

// BridgeScript returns the nft script writing BridgeChains on a node with
// none of them yet ("" when there are none): what golden files hold.
func BridgeScript(o fwapi.Owner, r fwapi.Rules) string {
	chains, skels := BridgeChains(o, r)
	if len(chains) == 0 {
		return ""
	}
	return nftmodel.Script(chains, nil, skels, nil)
}
