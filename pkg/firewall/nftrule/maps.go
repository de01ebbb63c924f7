package nftrule

// The named sets and maps of our nftables tables and how their elements
// are written: as nft text (the keys our rules' comments name, the golden
// files hold) and as the bytes the kernel keeps (what a netlink batch
// carries). Package nftmodel builds the chains and transactions around
// them.

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/netfilter"
)

// nft datatypes (nftables' datatype.h) of map key fields.
var keyTypes = map[string]struct {
	v4, v6 uint32 // type number per family
	size   uint32 // bytes, before padding to a register
}{
	"addr":    {7, 8, 0},
	"proto":   {12, 12, 1},
	"service": {13, 13, 2},
	"ifname":  {41, 41, 16},
	"addr4":   {7, 7, 4}, // an IPv4 address in a table of any family
	"addr6":   {8, 8, 16},
}

// Map is a named set or map of our tables; Fields name the datatypes of
// its key. A verdict map's elements jump to owner chains (the layout before
// data maps, kept for user conditions, spoof checks and isolation); a data
// map's elements carry Data (the datatypes of their value) and a set's
// nothing: fixed rules of the skeleton act on them, so that an ADD adds
// only elements. An Interval map's elements may cover a range of ports
// ("tcp . 8000-8100") or a prefix of addresses ("10.88.0.0/16") in any
// field; the kernel refuses an element overlapping the end of another.
type Map struct {
	Name     string
	Fields   []string
	Interval bool
	Data     []string // the value's datatypes; nil for a verdict map or a set
	IsSet    bool
}

// Verdict reports whether the map's elements jump to chains.
func (m Map) Verdict() bool { return !m.IsSet && m.Data == nil }

// Maps are the maps of our tables, by name: removing an owner chain
// encodes the keys of its elements whatever table it is in.
var Maps = map[string]Map{
	"ports":        {Name: "ports", Fields: []string{"proto", "service"}},
	"hostip_ports": {Name: "hostip_ports", Fields: []string{"addr", "proto", "service"}},
	"hairpins":     {Name: "hairpins", Fields: []string{"addr", "proto", "service"}},
	// Port ranges: maps of their own, since a map's flags cannot change
	// under the elements of running pods (portmap's README).
	"port_ranges":        {Name: "port_ranges", Fields: []string{"proto", "service"}, Interval: true},
	"hostip_port_ranges": {Name: "hostip_port_ranges", Fields: []string{"addr", "proto", "service"}, Interval: true},
	"hairpin_ranges":     {Name: "hairpin_ranges", Fields: []string{"addr", "proto", "service"}, Interval: true},
	"ifaces":             {Name: "ifaces", Fields: []string{"ifname"}},
	"icc_from":           {Name: "icc_from", Fields: []string{"ifname"}},
	"icc_to":             {Name: "icc_to", Fields: []string{"ifname"}},
	"icc_addrs4":         {Name: "icc_addrs4", Fields: []string{"addr4"}},
	"icc_addrs6":         {Name: "icc_addrs6", Fields: []string{"addr6"}},
	"iso_from":           {Name: "iso_from", Fields: []string{"ifname"}},
	"iso_to":             {Name: "iso_to", Fields: []string{"ifname"}},
	"iso_into":           {Name: "iso_into", Fields: []string{"ifname"}},
	"ingress":            {Name: "ingress", Fields: []string{"ifname"}},
	// Data maps and sets: what an attachment adds is elements only. An
	// interval set of a concatenation (pipapo) costs each element's removal
	// time in proportion to the set's elements: those that every pod
	// needs are hashes, and the prefixes of masq_nets and hairpin_nets are
	// per subnet (subnet chains).
	"masq":              {Name: "masq", Fields: []string{"addr"}, IsSet: true},
	"masq_nets":         {Name: "masq_nets", Fields: []string{"addr", "addr"}, Interval: true, IsSet: true},
	"hairpin_nets":      {Name: "hairpin_nets", Fields: []string{"addr", "addr"}, Interval: true, IsSet: true},
	"hairpin":           {Name: "hairpin", Fields: []string{"addr", "proto", "service"}, IsSet: true},
	"hairpin_all":       {Name: "hairpin_all", Fields: []string{"addr", "proto", "service"}, IsSet: true},
	"snat_to":           {Name: "snat_to", Fields: []string{"addr"}, Data: []string{"addr"}},
	"port_dnat":         {Name: "port_dnat", Fields: []string{"proto", "service"}, Data: []string{"addr", "service"}},
	"hostip_dnat":       {Name: "hostip_dnat", Fields: []string{"addr", "proto", "service"}, Data: []string{"addr", "service"}},
	"range_dnat":        {Name: "range_dnat", Fields: []string{"proto", "service"}, Interval: true, Data: []string{"addr"}},
	"hostip_range_dnat": {Name: "hostip_range_dnat", Fields: []string{"addr", "proto", "service"}, Interval: true, Data: []string{"addr"}},
	"hairpin_masq":      {Name: "hairpin_masq", Fields: []string{"addr", "proto", "service", "addr"}, Interval: true, IsSet: true},
}

var typeNames = map[string][2]string{
	"addr": {"ipv4_addr", "ipv6_addr"}, "proto": {"inet_proto", "inet_proto"},
	"service": {"inet_service", "inet_service"}, "ifname": {"ifname", "ifname"},
	"addr4": {"ipv4_addr", "ipv4_addr"}, "addr6": {"ipv6_addr", "ipv6_addr"},
}

func FieldSize(t Table, f string) uint32 {
	if f == "addr" {
		if t.Family == "ip6" {
			return 16
		}
		return 4
	}
	return keyTypes[f].size
}

// userdata is what nft stores with a map keyed by an interface name and
// needs to print its keys: their byte order (NFTNL_UDATA_SET_KEYBYTEORDER,
// BYTEORDER_HOST_ENDIAN). nil for other maps, whose keys nft prints without.
func (m Map) userdata() []byte {
	if len(m.Fields) != 1 || m.Fields[0] != "ifname" {
		return nil
	}
	return append([]byte{0, 4}, binary.NativeEndian.AppendUint32(nil, 1)...)
}

// Text is the set's or map's type as nft writes it: "ipv4_addr . inet_service"
// for a set, followed by " : verdict" or " : <data types>" for a map.
func (m Map) Text(t Table) string {
	out := typeText(t, m.Fields)
	switch {
	case m.Verdict():
		out += " : verdict"
	case !m.IsSet:
		out += " : " + typeText(t, m.Data)
	}
	return out
}

func typeText(t Table, fields []string) string {
	var names []string
	for _, f := range fields {
		i := 0
		if t.Family == "ip6" {
			i = 1
		}
		names = append(names, typeNames[f][i])
	}
	return strings.Join(names, " . ")
}

// Spec is the set as the kernel creates it.
func (m Map) Spec(t Table) netfilter.SetSpec {
	s := netfilter.SetSpec{
		Name: m.Name, KeyType: typeID(t, m.Fields), KeyLen: concatLen(t, m.Fields),
		Interval: m.Interval, Verdict: m.Verdict(), Udata: m.userdata(),
	}
	if m.Interval {
		s.FieldLens = m.fieldLens(t)
	}
	if m.Data != nil {
		s.DataType, s.DataLen = typeID(t, m.Data), concatLen(t, m.Data)
	}
	return s
}

// typeID is the datatype number of a concatenation: 6 bits per field.
func typeID(t Table, fields []string) uint32 {
	var id uint32
	for _, f := range fields {
		kt := keyTypes[f].v4
		if t.Family == "ip6" {
			kt = keyTypes[f].v6
		}
		id = id<<6 | kt
	}
	return id
}

// concatLen is the size of a key or value; each field of a concatenation
// fills whole 32-bit registers.
func concatLen(t Table, fields []string) uint32 {
	if len(fields) == 1 {
		return FieldSize(t, fields[0])
	}
	var n uint32
	for _, f := range fields {
		n += (FieldSize(t, f) + 3) &^ 3
	}
	return n
}

// fieldLens are the lengths of the key's fields, unpadded: what the
// kernel needs to hold a concatenation in an interval map.
func (m Map) fieldLens(t Table) []uint32 {
	out := make([]uint32, len(m.Fields))
	for i, f := range m.Fields {
		out[i] = FieldSize(t, f)
	}
	return out
}

// Table is one nftables table.
type Table = netfilter.Table

// Elem is an element of a set or map of a table, written as nft writes
// it: its key and, in a data map, its value (Data).
type Elem struct{ Set, Key, Data string }

// ElemKeys encodes an element key written as text ("10.0.0.2 . tcp . 80").
// google/nftables takes keys as bytes too (SetElement.Key) and encodes no
// text: our elements are written in our comments as text, so the encoding
// lives here, next to the map types it follows. For an element of an
// Interval map it also returns the key of the range's end ("tcp . 8000-8100" gives the
// keys of "tcp . 8000" and "tcp . 8100"; "10.88.0.2 . 10.88.0.0/16" those
// of "10.88.0.2 . 10.88.0.0" and "10.88.0.2 . 10.88.255.255"; a single
// value is a range of one).
func ElemKeys(t Table, el Elem) (key, end []byte, err error) {
	m, ok := Maps[el.Set]
	if !ok {
		return nil, nil, fmt.Errorf("unknown map %q", el.Set)
	}
	parts := strings.Split(el.Key, " . ")
	if len(parts) != len(m.Fields) {
		return nil, nil, fmt.Errorf("map %s: key %q does not have %d fields", el.Set, el.Key, len(m.Fields))
	}
	for i, f := range m.Fields {
		first, last, err := fieldRange(t, f, parts[i], m.Interval)
		if err != nil {
			return nil, nil, fmt.Errorf("map %s: key %q: %w", el.Set, el.Key, err)
		}
		key = append(key, pad(len(m.Fields), first)...)
		end = append(end, pad(len(m.Fields), last)...)
	}
	if !m.Interval {
		end = nil
	}
	return key, end, nil
}

// fieldRange encodes one field of a key: its first and last value, the
// same unless interval allows a range ("8000-8100") or a prefix
// ("10.88.0.0/16") there.
func fieldRange(t Table, f, s string, interval bool) (first, last []byte, err error) {
	if _, n, perr := net.ParseCIDR(s); interval && perr == nil && (f == "addr" || f == "addr4" || f == "addr6") {
		lastIP := make(net.IP, len(n.IP))
		for i := range n.IP {
			lastIP[i] = n.IP[i] | ^n.Mask[i]
		}
		if first, err = fieldBytes(t, f, n.IP.String()); err == nil {
			last, err = fieldBytes(t, f, lastIP.String())
		}
		return first, last, err
	}
	a, b, isRange := strings.Cut(s, "-")
	if !interval || !isRange || f != "service" {
		first, err = fieldBytes(t, f, s)
		return first, first, err
	}
	if first, err = fieldBytes(t, f, a); err == nil {
		last, err = fieldBytes(t, f, b)
	}
	if err == nil && string(last) < string(first) {
		err = fmt.Errorf("range %q ends before it starts", s)
	}
	return first, last, err
}

// ElemData encodes the value of an element of a data map written as text
// ("10.88.0.2 . 80"); nil for a set's or verdict map's element.
func ElemData(t Table, el Elem) ([]byte, error) {
	m, ok := Maps[el.Set]
	if !ok {
		return nil, fmt.Errorf("unknown map %q", el.Set)
	}
	if m.Data == nil {
		return nil, nil
	}
	parts := strings.Split(el.Data, " . ")
	if len(parts) != len(m.Data) {
		return nil, fmt.Errorf("map %s: value %q does not have %d fields", el.Set, el.Data, len(m.Data))
	}
	var out []byte
	for i, f := range m.Data {
		b, err := fieldBytes(t, f, parts[i])
		if err != nil {
			return nil, fmt.Errorf("map %s: value %q: %w", el.Set, el.Data, err)
		}
		out = append(out, pad(len(m.Data), b)...)
	}
	return out, nil
}

// pad fills a field of a concatenation of n fields to whole 32-bit
// registers.
func pad(n int, b []byte) []byte {
	if n > 1 {
		b = append(b, make([]byte, (4-len(b)%4)%4)...)
	}
	return b
}

func fieldBytes(t Table, f, s string) ([]byte, error) {
	switch f {
	case "addr":
		ip := net.ParseIP(s)
		if ip == nil || (t.Family == "ip") != fwapi.IsV4(ip) {
			return nil, fmt.Errorf("%q is not an address of family %s", s, t.Family)
		}
		return famIP(t.Family == "ip", ip), nil
	case "addr4", "addr6":
		ip := net.ParseIP(s)
		if ip == nil || (f == "addr4") != fwapi.IsV4(ip) {
			return nil, fmt.Errorf("%q is not an address of type %s", s, f)
		}
		return famIP(f == "addr4", ip), nil
	case "proto":
		p, ok := ProtoNumbers[s]
		if !ok {
			return nil, fmt.Errorf("unknown protocol %q", s)
		}
		return []byte{p}, nil
	case "service":
		port, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q: %w", s, err)
		}
		return binary.BigEndian.AppendUint16(nil, uint16(port)), nil
	}
	name := strings.Trim(s, `"`)
	if len(name) >= 16 {
		return nil, fmt.Errorf("interface name %q too long", name)
	}
	return append([]byte(name), make([]byte, 16-len(name))...), nil
}
