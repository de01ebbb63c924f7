package netfilter

// Table names one nftables table: its family as nft writes it (ip, ip6,
// inet, bridge) and its name.
type Table struct{ Family, Name string }

// String returns the table as nft writes it: "<family> <name>".
func (t Table) String() string { return t.Family + " " + t.Name }

// Proto returns the table's family as the nfgenmsg header carries it
// (NFPROTO_*); 0 for an unknown family.
func (t Table) Proto() byte { return Proto(t.Family) }

// Proto returns the NFPROTO_* number of a family as nft writes it.
func Proto(family string) byte {
	switch family {
	case "ip":
		return 2 // NFPROTO_IPV4
	case "ip6":
		return 10 // NFPROTO_IPV6
	case "inet":
		return 1 // NFPROTO_INET
	case "bridge":
		return 7 // NFPROTO_BRIDGE
	}
	return 0
}
