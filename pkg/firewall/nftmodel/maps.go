package nftmodel

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftrule"
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

// Map is a verdict map; Fields name the datatypes of its key. An
// Interval map's elements may cover a range of ports ("tcp . 8000-8100"),
// its last field; the kernel refuses an element overlapping another.
type Map struct {
	Name     string
	Fields   []string
	Interval bool
}

// Maps are the maps of our tables, by name: removing an owner chain
// encodes the keys of its elements whatever table it is in.
var Maps = map[string]Map{
	"sources":      {"sources", []string{"addr"}, false},
	"ports":        {"ports", []string{"proto", "service"}, false},
	"hostip_ports": {"hostip_ports", []string{"addr", "proto", "service"}, false},
	"hairpins":     {"hairpins", []string{"addr", "proto", "service"}, false},
	// Port ranges: maps of their own, since a map's flags cannot change
	// under the elements of running pods (portmap's README).
	"port_ranges":        {"port_ranges", []string{"proto", "service"}, true},
	"hostip_port_ranges": {"hostip_port_ranges", []string{"addr", "proto", "service"}, true},
	"hairpin_ranges":     {"hairpin_ranges", []string{"addr", "proto", "service"}, true},
	"ifaces":             {"ifaces", []string{"ifname"}, false},
	"icc_from":           {"icc_from", []string{"ifname"}, false},
	"icc_to":             {"icc_to", []string{"ifname"}, false},
	"icc_addrs4":         {"icc_addrs4", []string{"addr4"}, false},
	"icc_addrs6":         {"icc_addrs6", []string{"addr6"}, false},
	"iso_from":           {"iso_from", []string{"ifname"}, false},
	"iso_to":             {"iso_to", []string{"ifname"}, false},
	"iso_into":           {"iso_into", []string{"ifname"}, false},
	"ingress":            {"ingress", []string{"ifname"}, false},
}

var typeNames = map[string][2]string{
	"addr": {"ipv4_addr", "ipv6_addr"}, "proto": {"inet_proto", "inet_proto"},
	"service": {"inet_service", "inet_service"}, "ifname": {"ifname", "ifname"},
	"addr4": {"ipv4_addr", "ipv4_addr"}, "addr6": {"ipv6_addr", "ipv6_addr"},
}

func fieldSize(t Table, f string) uint32 {
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

// text is the map's type as nft writes it.
func (m Map) text(t Table) string {
	var names []string
	for _, f := range m.Fields {
		i := 0
		if t.Family == "ip6" {
			i = 1
		}
		names = append(names, typeNames[f][i])
	}
	return strings.Join(names, " . ")
}

// keyType is the datatype number of the key: 6 bits per concatenated field.
func (m Map) keyType(t Table) uint32 {
	var id uint32
	for _, f := range m.Fields {
		kt := keyTypes[f].v4
		if t.Family == "ip6" {
			kt = keyTypes[f].v6
		}
		id = id<<6 | kt
	}
	return id
}

// keyLen is the key size; each field of a concatenation fills whole
// 32-bit registers.
func (m Map) keyLen(t Table) uint32 {
	if len(m.Fields) == 1 {
		return fieldSize(t, m.Fields[0])
	}
	var n uint32
	for _, f := range m.Fields {
		n += (fieldSize(t, f) + 3) &^ 3
	}
	return n
}

// fieldLens are the lengths of the key's fields, unpadded: what the
// kernel needs to hold a concatenation in an interval map.
func (m Map) fieldLens(t Table) []uint32 {
	out := make([]uint32, len(m.Fields))
	for i, f := range m.Fields {
		out[i] = fieldSize(t, f)
	}
	return out
}

// ElemKey encodes an element key written as text ("10.0.0.2 . tcp . 80").
// google/nftables takes keys as bytes too (SetElement.Key) and encodes no
// text: our elements are written in our comments as text, so the encoding
// lives here, next to the map types it follows.
func ElemKey(t Table, el Elem) ([]byte, error) {
	key, _, err := ElemKeys(t, el)
	return key, err
}

// ElemKeys is ElemKey for any map: for an element of an Interval map it
// also returns the key of the range's end ("tcp . 8000-8100" gives the
// keys of "tcp . 8000" and "tcp . 8100"; a single port is a range of one).
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
		first, last := parts[i], parts[i]
		if m.Interval && i == len(m.Fields)-1 {
			if a, b, found := strings.Cut(first, "-"); found {
				first, last = a, b
			}
		}
		bf, err := fieldBytes(t, f, first)
		if err == nil && last != first {
			var bl []byte
			bl, err = fieldBytes(t, f, last)
			if err == nil && string(bl) < string(bf) {
				err = fmt.Errorf("range %q ends before it starts", parts[i])
			}
			end = append(end, pad(m, bl)...)
		} else {
			end = append(end, pad(m, bf)...)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("map %s: key %q: %w", el.Set, el.Key, err)
		}
		key = append(key, pad(m, bf)...)
	}
	if !m.Interval {
		end = nil
	}
	return key, end, nil
}

// pad fills a field of a concatenation to whole 32-bit registers.
func pad(m Map, b []byte) []byte {
	if len(m.Fields) > 1 {
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
		return nftrule.FamIP(t.Family == "ip", ip), nil
	case "addr4", "addr6":
		ip := net.ParseIP(s)
		if ip == nil || (f == "addr4") != fwapi.IsV4(ip) {
			return nil, fmt.Errorf("%q is not an address of type %s", s, f)
		}
		return nftrule.FamIP(f == "addr4", ip), nil
	case "proto":
		p, ok := nftrule.ProtoNumbers[s]
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
