package nftmodel

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// crossMaps names, for each map of host ports, the maps a new element of
// it must be compared with: the kernel refuses a key held in the same map
// of single ports, but cannot see a key in another map (single ports and
// ranges, data maps and the verdict maps of owners with user conditions),
// and its interval maps (pipapo) refuse a range overlapping an end of
// another, not one enclosing another.
var crossMaps = map[string][]string{
	"ports":              {"port_dnat", "port_ranges", "range_dnat"},
	"port_dnat":          {"ports", "port_ranges", "range_dnat"},
	"port_ranges":        {"ports", "port_dnat", "port_ranges", "range_dnat"},
	"range_dnat":         {"ports", "port_dnat", "port_ranges", "range_dnat"},
	"hostip_ports":       {"hostip_dnat", "hostip_port_ranges", "hostip_range_dnat"},
	"hostip_dnat":        {"hostip_ports", "hostip_port_ranges", "hostip_range_dnat"},
	"hostip_port_ranges": {"hostip_ports", "hostip_dnat", "hostip_port_ranges", "hostip_range_dnat"},
	"hostip_range_dnat":  {"hostip_ports", "hostip_dnat", "hostip_port_ranges", "hostip_range_dnat"},
}

// span is the host ports an element of a port map holds.
type span struct {
	host, proto string // host is "" in maps without an address
	first, last int
}

func (s span) overlaps(o span) bool {
	return s.host == o.host && s.proto == o.proto && s.first <= o.last && o.first <= s.last
}

// CrossConflict fails with fwapi.ErrConflict when a host port of the
// desired chains is held by another owner's element that the kernel would
// not refuse (a single port inside another owner's range, a range over
// another owner's single port or around its range), read on conn: one dump
// per map a port's element must be compared with, nothing when that map
// does not exist (no range was ever mapped in the table). Two ADDs racing
// past each other's read are not caught.
func CrossConflict(conn *netfilter.Conn, o fwapi.Owner, desired []Chain) error {
	read := map[string][]netfilter.Elem{}
	for _, c := range desired {
		for _, el := range c.Elems() {
			sets, ok := crossMaps[el.Set]
			if !ok {
				continue
			}
			want, err := spanOfText(el)
			if err != nil {
				return types.Errorf(types.ErrInvalidConfig, "%w", err)
			}
			for _, set := range sets {
				held, err := heldBy(conn, read, c, set, want)
				if err != nil {
					return types.Errorf(types.ErrIO, "%s: %w", o, err)
				}
				if held != "" {
					return types.Errorf(fwapi.ErrConflict, "%s: host ports %s (%s) overlap %s", o, el.Key, el.Set, held)
				}
			}
		}
	}
	return nil
}

// heldBy names the element of another owner's chain in set that overlaps
// want ("" for none), set read once per call into read.
func heldBy(conn *netfilter.Conn, read map[string][]netfilter.Elem, c Chain, set string, want span) (string, error) {
	id := c.Table.String() + " " + set
	if _, done := read[id]; !done {
		elems, err := conn.MapElems(c.Table.Proto(), c.Table.Name, set)
		if err != nil {
			return "", err
		}
		read[id] = elems
	}
	for _, held := range read[id] {
		owner := held.Chain // a verdict map's; a data map's element names its ledger
		if owner == "" {
			owner = held.Comment
		}
		got, ok := spanOfKey(c.Table, Maps[set], held)
		if ok && owner != c.Name && got.overlaps(want) {
			return fmt.Sprintf("%s . %d-%d in %s, held by chain %s of another attachment", got.proto, got.first, got.last, set, owner), nil
		}
	}
	return "", nil
}

// spanOfText reads an element written as text ("tcp . 8000-8100",
// "192.0.2.1 . udp . 53").
func spanOfText(el Elem) (span, error) {
	parts := strings.Split(el.Key, " . ")
	var s span
	if len(parts) == 3 {
		s.host, parts = net.ParseIP(parts[0]).String(), parts[1:]
	}
	if len(parts) != 2 {
		return s, fmt.Errorf("map %s: key %q", el.Set, el.Key)
	}
	s.proto = parts[0]
	first, last, isRange := strings.Cut(parts[1], "-")
	if !isRange {
		last = first
	}
	var err1, err2 error
	s.first, err1 = strconv.Atoi(first)
	s.last, err2 = strconv.Atoi(last)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("map %s: key %q", el.Set, el.Key)
	}
	return s, nil
}

// spanOfKey reads an element as the kernel holds it: each field of the
// concatenation fills whole 32-bit registers.
func spanOfKey(t Table, m Map, el netfilter.Elem) (span, bool) {
	var s span
	off := 0
	if len(m.Fields) == 3 {
		n := int(nftrule.FieldSize(t, "addr"))
		if len(el.Key) < n {
			return s, false
		}
		s.host, off = net.IP(el.Key[:n]).String(), (n+3)&^3
	}
	if len(el.Key) < off+6 {
		return s, false
	}
	for name, num := range nftrule.ProtoNumbers {
		if num == el.Key[off] {
			s.proto = name
		}
	}
	s.first = int(binary.BigEndian.Uint16(el.Key[off+4:]))
	s.last = s.first
	if len(el.End) >= off+6 {
		s.last = int(binary.BigEndian.Uint16(el.End[off+4:]))
	}
	return s, true
}
