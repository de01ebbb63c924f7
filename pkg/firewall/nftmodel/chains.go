package nftmodel

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"slices"
	"strings"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
)

// Table is one nftables table.
type Table = netfilter.Table

// Our tables. None clashes with a reference plugin's table. They are all
// named here, whichever layer fills them, so that any layer can remove
// every chain of an owner (Remove) or of a network (GC).
var (
	Masq4 = Table{Family: "ip", Name: "cnisuite_masq"}
	Masq6 = Table{Family: "ip6", Name: "cnisuite_masq"}
	Port4 = Table{Family: "ip", Name: "cnisuite_portmap"}
	Port6 = Table{Family: "ip6", Name: "cnisuite_portmap"}
	Spoof = Table{Family: "bridge", Name: "cnisuite_spoofcheck"}
	// IsoBridge and IsoInet hold the isolation of bridge networks (icc,
	// isolate): frames between bridge ports, and forwarded packets.
	IsoBridge = Table{Family: "bridge", Name: "cnisuite_isolate"}
	IsoInet   = Table{Family: "inet", Name: "cnisuite_isolate"}
	Tables    = []Table{Masq4, Masq6, Port4, Port6, Spoof, IsoBridge, IsoInet}
)

// Owner chain prefixes, one per kind of rule.
const (
	PrefixMasq    = "mq"  // bridge masquerade, in cnisuite_masq
	PrefixDNAT    = "pm"  // portmap DNAT, in cnisuite_portmap
	PrefixHairpin = "pmq" // portmap masquerade, in cnisuite_portmap
	PrefixSpoof   = "sc"  // spoof check, in cnisuite_spoofcheck
	PrefixICCFrom = "ic"  // icc off: frames from the owner's port, bridge cnisuite_isolate
	PrefixICCTo   = "icd" // icc off: frames to the owner's port, bridge cnisuite_isolate
	PrefixICCIP   = "icr" // icc off: routed to the owner's addresses, inet cnisuite_isolate
	PrefixIsoHold = "ih"  // isolate: the owner's hold on its network's chains
)

// Network chain prefixes: chains shared by every owner of a network, named
// after the network alone (NetChainName). Owners hold them with jumps from
// their PrefixIsoHold chain; the kernel refuses to delete a chain still
// jumped to, which is how Remove and GC leave them to the last owner.
const (
	PrefixIsoFrom = "if" // isolate: forwarded from the network's bridge
	PrefixIsoTo   = "it" // isolate: forwarded to the bridge from another isolated one
	PrefixIsoInto = "is" // isolate strict: forwarded to the bridge from a non-uplink
	PrefixIngress = "ig" // ingressFilter: forwarded to the bridge from outside
)

// Subnet chain prefixes: chains shared by every owner whose addresses are
// in one subnet, whichever its network, named after the table and the
// subnet (SubnetChainName). Their rules record the elements of the subnet
// (the elements of masq_nets and hairpin_nets, one per subnet, not per
// pod, so that no interval set grows with the pods: removing an element
// from one costs the kernel time in proportion to its elements). Owners
// hold them with a jump from their ledger chain, which nothing reaches;
// Remove and GC delete one when no owner's jump holds it (ReleaseShared).
const (
	PrefixMasqNet    = "ms" // masq_nets elements, in cnisuite_masq
	PrefixHairpinNet = "ps" // hairpin_nets elements, in cnisuite_portmap
)

// SubnetChainName returns the name of the subnet chain of the given kind
// for subnet n.
func SubnetChainName(prefix string, n *net.IPNet) string {
	sum := sha256.Sum256([]byte(n.String()))
	return prefix + "-" + hex.EncodeToString(sum[:8])
}

// commentTag starts the comment of every rule we write.
const commentTag = "cnisuite"

// Chain is an owner chain with the rules it must hold.
type Chain struct {
	Table Table
	Name  string
	Rules []Rule
}

// Rule is a rule of an owner chain: its nft text and, when it has one,
// its kernel form, both rendered from its parts (Build; fixed rules of a
// skeleton give both). Elem, when set, is the map element that dispatches
// packets to the chain for this rule.
type Rule struct {
	Text  string
	Elem  *Elem
	Exprs []expr.Any // the kernel form of Text; nil when only nft can build it
	// Sets are the anonymous sets the expressions look up
	// (nftrule.Lookup(i, …) stands for Sets[i]), written in the same
	// transaction.
	Sets []nftrule.Set
}

// Build returns the rule made of parts (package nftrule), dispatched to by
// elem (nil for none).
func Build(elem *Elem, parts ...nftrule.Part) Rule {
	r := nftrule.Build(parts...)
	return Rule{Text: r.Text, Elem: elem, Exprs: r.Exprs, Sets: r.Sets}
}

// Elem is an element of a set or map of our tables (package nftrule).
type Elem = nftrule.Elem

// Map is a set or map of our tables; Maps are they all, by name.
type Map = nftrule.Map

// Maps are the sets and maps of our tables, by name.
var Maps = nftrule.Maps

// Ledger returns the rule of an owner chain that records el, an element of
// a data map or set that fixed rules of the skeleton act on. Nothing jumps
// to such a chain: its rules do nothing ("continue") and say, in their
// comments, which elements are the owner's, so that Remove, Check and GC
// find them as they find the elements of a verdict map. An ADD that adds
// only elements and such a chain makes the kernel validate no more than
// the skeleton's fixed chains, where a jump to a chain of the owner's
// would make it walk every owner's chain (test/bench/RESULTS.md, growth
// profile, cause 4).
func Ledger(el Elem) Rule { return Build(&el, nftrule.Continue) }

// Comment returns the rule's comment: a digest of what the rule does and
// the map element it needs (with its value, for a data map), so that
// Remove finds the element again.
func (r Rule) Comment() string {
	what := r.Text
	if r.Elem != nil && !Maps[r.Elem.Set].Verdict() {
		what += " " + r.Elem.Set + " " + r.Elem.Key + " : " + r.Elem.Data
	}
	sum := sha256.Sum256([]byte(what))
	c := commentTag + " " + hex.EncodeToString(sum[:4])
	if r.Elem != nil {
		// nft strings cannot hold quotes: an interface key goes bare.
		c += " " + r.Elem.Set + ":" + strings.Trim(r.Elem.Key, `"`)
		if r.Elem.Data != "" {
			c += " : " + r.Elem.Data
		}
	}
	return c
}

// parseComment extracts the element of a comment we wrote; ok is false
// for a comment that is not ours.
func parseComment(c string) (digest string, elem *Elem, ok bool) {
	fields := strings.SplitN(c, " ", 3)
	if len(fields) < 2 || fields[0] != commentTag {
		return "", nil, false
	}
	if len(fields) == 3 {
		set, key, found := strings.Cut(fields[2], ":")
		if !found {
			return "", nil, false
		}
		if m, known := Maps[set]; known && len(m.Fields) == 1 && m.Fields[0] == "ifname" {
			key = `"` + key + `"`
		}
		key, data, _ := strings.Cut(key, " : ")
		elem = &Elem{Set: set, Key: key, Data: data}
	}
	return fields[1], elem, true
}

// ChainName returns the name of an owner chain of the given kind.
func ChainName(prefix string, o fwapi.Owner) string {
	return prefix + "-" + o.NetHash()[:8] + "-" + o.Hash()[:16]
}

// NetChainName returns the name of a network chain of the given kind.
func NetChainName(prefix string, o fwapi.Owner) string {
	return prefix + "-" + o.NetHash()[:8]
}

// NetChains lists every network chain of the owner's network.
func NetChains(o fwapi.Owner) []Chain {
	return []Chain{
		{Table: IsoInet, Name: NetChainName(PrefixIsoFrom, o)},
		{Table: IsoInet, Name: NetChainName(PrefixIsoTo, o)},
		{Table: IsoInet, Name: NetChainName(PrefixIsoInto, o)},
		{Table: IsoInet, Name: NetChainName(PrefixIngress, o)},
	}
}

// netPrefix returns the common start of the names of a network's chains.
func netPrefix(prefix, plugin, network string) string {
	return prefix + "-" + fwapi.Owner{Plugin: plugin, Network: network}.NetHash()[:8] + "-"
}

// OwnerChains lists every chain an owner may have, whatever its rules.
func OwnerChains(o fwapi.Owner) []Chain {
	return []Chain{
		{Table: Masq4, Name: ChainName(PrefixMasq, o)},
		{Table: Masq6, Name: ChainName(PrefixMasq, o)},
		{Table: Port4, Name: ChainName(PrefixDNAT, o)},
		{Table: Port4, Name: ChainName(PrefixHairpin, o)},
		{Table: Port6, Name: ChainName(PrefixDNAT, o)},
		{Table: Port6, Name: ChainName(PrefixHairpin, o)},
		{Table: Spoof, Name: ChainName(PrefixSpoof, o)},
		{Table: IsoBridge, Name: ChainName(PrefixICCFrom, o)},
		{Table: IsoBridge, Name: ChainName(PrefixICCTo, o)},
		{Table: IsoInet, Name: ChainName(PrefixICCIP, o)},
		{Table: IsoInet, Name: ChainName(PrefixIsoHold, o)},
	}
}

// ownerPrefixes are the prefixes of owner chains (OwnerChains).
var ownerPrefixes = []string{PrefixMasq, PrefixDNAT, PrefixHairpin, PrefixSpoof, PrefixICCFrom, PrefixICCTo, PrefixICCIP, PrefixIsoHold}

// isOwnerChain reports whether name is shaped like the name of a chain
// that records elements: an owner chain (a prefix of ours, 8 hex of a
// network and 16 of an owner) or a subnet chain (a prefix and 16 hex).
func isOwnerChain(name string) bool {
	if isSubnetChain(name) {
		return true
	}
	prefix, rest, _ := strings.Cut(name, "-")
	netHash, owner, ok := strings.Cut(rest, "-")
	if !ok || len(netHash) != 8 || len(owner) != 16 || !isHex(netHash+owner) {
		return false
	}
	return slices.Contains(ownerPrefixes, prefix)
}

// isSubnetChain reports whether name is a subnet chain's (SubnetChainName).
func isSubnetChain(name string) bool {
	prefix, rest, _ := strings.Cut(name, "-")
	return len(rest) == 16 && isHex(rest) && (prefix == PrefixMasqNet || prefix == PrefixHairpinNet)
}

// exclusive reports whether a fresh chain's elements are created with
// create element: an owner's are its own, so a key already held is
// another owner's; a subnet chain's element is the same whoever writes
// it, and owners of one subnet may write it at once.
func exclusive(chain string) bool { return !isSubnetChain(chain) }

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func isNetChain(name, plugin, network string) bool {
	for _, p := range ownerPrefixes {
		if strings.HasPrefix(name, netPrefix(p, plugin, network)) {
			return true
		}
	}
	return false
}

// Existing is an owner chain as found in the kernel: its name, the
// comments of its rules, the chains they jump to, and its use count (its
// rules plus the jumps and verdict map elements leading to it).
type Existing struct {
	Table    Table
	Name     string
	Comments []string
	Jumps    []string
	Use      uint32
}

// ID names the chain uniquely among our tables.
func (e Existing) ID() string { return e.Table.String() + " " + e.Name }

// ID names the chain uniquely among our tables.
func (c Chain) ID() string { return c.Table.String() + " " + c.Name }

// Comments returns the comments the chain's rules carry, in order.
func (c Chain) Comments() []string {
	out := make([]string, len(c.Rules))
	for i, r := range c.Rules {
		out[i] = r.Comment()
	}
	return out
}

// verdictElems counts the elements of verdict maps among the chain's:
// they, and not those of sets or data maps, hold a reference to it.
func (e Existing) verdictElems() int {
	n := 0
	for _, el := range e.Elems() {
		if Maps[el.Set].Verdict() {
			n++
		}
	}
	return n
}

// Elems returns the distinct map elements the existing chain's rules name.
func (e Existing) Elems() []Elem {
	var out []Elem
	seen := map[Elem]bool{}
	for _, c := range e.Comments {
		if _, el, ok := parseComment(c); ok && el != nil && !seen[*el] {
			seen[*el] = true
			out = append(out, *el)
		}
	}
	return out
}

// Elems returns the distinct map elements the chain needs.
func (c Chain) Elems() []Elem {
	var out []Elem
	seen := map[Elem]bool{}
	for _, r := range c.Rules {
		if r.Elem != nil && !seen[*r.Elem] {
			seen[*r.Elem] = true
			out = append(out, *r.Elem)
		}
	}
	return out
}

// Buildable reports whether every rule of the chains has a kernel form, so
// that the call can go over netlink instead of `nft -f -`.
func Buildable(chains []Chain) bool {
	for _, c := range chains {
		for _, r := range c.Rules {
			if r.Exprs == nil {
				return false
			}
		}
	}
	return true
}
