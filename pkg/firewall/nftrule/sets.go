package nftrule

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"

	"github.com/google/nftables/expr"

	"cnisuite/pkg/netfilter"
)

// Set is an anonymous set a rule looks a register up in (the "{ … }" of
// "ip saddr != { 10.0.0.2, fe80::/10 }"): its key type as nft names it
// (ipv4_addr, ipv6_addr, ifname) and its items as nft writes them
// (addresses, prefixes, bare interface names).
type Set struct {
	Type  string
	Items []string
}

// Text returns the set as nft writes it, items sorted.
func (s Set) Text() string {
	items := slices.Clone(s.Items)
	if s.Type == "ifname" {
		for i, it := range items {
			items[i] = `"` + it + `"`
		}
	}
	slices.Sort(items)
	return "{ " + strings.Join(items, ", ") + " }"
}

// setTypes are nft's datatype numbers, key lengths and byte orders (1
// host, 2 network: nft's enum byteorder) of the key types.
var setTypes = map[string]struct{ num, len, order uint32 }{
	"ipv4_addr": {7, 4, 2}, "ipv6_addr": {8, 16, 2}, "ifname": {41, 16, 1},
}

// setUserdata is the user data nft gives a set: the byte order of its key
// (NFTNL_UDATA_SET_KEYBYTEORDER), without which it prints an interface
// name as "".
func setUserdata(order uint32) []byte {
	return binary.NativeEndian.AppendUint32([]byte{0, 4}, order)
}

// inSet matches register 1 against set, negated with invert: a lookup in
// it, the rule's set i, or, for a set of one address, the comparison nft
// writes for it instead. It returns the sets the rule gains.
func inSet(set Set, invert bool, i int) ([]expr.Any, []Set) {
	if len(set.Items) == 1 && !strings.Contains(set.Items[0], "/") {
		op := expr.CmpOpEq
		if invert {
			op = expr.CmpOpNeq
		}
		if elems, _, err := set.elems(); err == nil {
			return []expr.Any{&expr.Cmp{Op: op, Register: Reg1, Data: elems[0].Key}}, nil
		}
	}
	return []expr.Any{Lookup(i, invert)}, []Set{set}
}

// Lookup is the expression that looks register 1 up in set i of the rule
// (Rule.Sets), negated with invert; addRule names the set it created.
func Lookup(i int, invert bool) expr.Any {
	return &expr.Lookup{SourceRegister: Reg1, SetID: uint32(i), Invert: invert}
}

// elems returns the kernel's elements of the set and whether it is an
// interval set (some item is a prefix). An interval set holds ranges, each
// its first key and, flagged End, the key past it (none past the end of
// the address space); as nft does, ranges that touch or overlap are
// merged, sorted.
func (s Set) elems() ([]netfilter.SetElem, bool, error) {
	interval := slices.ContainsFunc(s.Items, func(it string) bool { return strings.Contains(it, "/") })
	if s.Type == "ifname" {
		var out []netfilter.SetElem
		for _, it := range slices.Sorted(slices.Values(s.Items)) {
			key := make([]byte, 16)
			copy(key, it)
			out = append(out, netfilter.SetElem{Key: key})
		}
		return out, false, nil
	}
	var ranges [][2]*big.Int // [first, past]
	for _, it := range s.Items {
		n, err := prefixOf(it, s.Type == "ipv4_addr")
		if err != nil {
			return nil, false, err
		}
		ones, bits := n.Mask.Size()
		first := new(big.Int).SetBytes(n.IP)
		ranges = append(ranges, [2]*big.Int{first, new(big.Int).Add(first, new(big.Int).Lsh(big.NewInt(1), uint(bits-ones)))})
	}
	slices.SortFunc(ranges, func(a, b [2]*big.Int) int { return a[0].Cmp(b[0]) })
	size := setTypes[s.Type].len
	var out []netfilter.SetElem
	for i := 0; i < len(ranges); i++ {
		r := ranges[i]
		for interval && i+1 < len(ranges) && ranges[i+1][0].Cmp(r[1]) <= 0 {
			i++
			if ranges[i][1].Cmp(r[1]) > 0 {
				r[1] = ranges[i][1]
			}
		}
		out = append(out, netfilter.SetElem{Key: r[0].FillBytes(make([]byte, size))})
		if interval && r[1].BitLen() <= int(size)*8 {
			out = append(out, netfilter.SetElem{Key: r[1].FillBytes(make([]byte, size)), End: true})
		}
	}
	return out, interval, nil
}

// prefixOf reads an address or a prefix of the family.
func prefixOf(item string, v4 bool) (*net.IPNet, error) {
	if !strings.Contains(item, "/") {
		ip := net.ParseIP(item)
		if ip == nil {
			return nil, fmt.Errorf("set item %q: not an address", item)
		}
		item += map[bool]string{true: "/32", false: "/128"}[ip.To4() != nil]
	}
	_, n, err := net.ParseCIDR(item)
	if err != nil || (n.IP.To4() != nil) != v4 {
		return nil, fmt.Errorf("set item %q: not an address or prefix of the family", item)
	}
	if v4 {
		n.IP = n.IP.To4()
	}
	return n, nil
}

// Kernel returns what the kernel makes of the set: nft's datatype number
// and length of its key, whether it is an interval set, the user data nft
// gives it and its elements.
func (s Set) Kernel() (netfilter.AnonSet, error) {
	st := setTypes[s.Type]
	elems, interval, err := s.elems()
	return netfilter.AnonSet{KeyType: st.num, KeyLen: st.len, Interval: interval, UserData: setUserdata(st.order), Elems: elems}, err
}
