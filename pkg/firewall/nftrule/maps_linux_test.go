package nftrule_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/nftrule"
	"cnisuite/pkg/netfilter"
	"cnisuite/test/nftfake"
)

// example writes a value of each field, as nft text; an interval map's
// service and address fields hold a range.
func example(v4, interval bool, fields []string) string {
	addr, prefix := "fd00::2", "fd00::/64"
	if v4 {
		addr, prefix = "10.88.0.2", "10.88.0.0/16"
	}
	var out []string
	for _, f := range fields {
		switch {
		case f == "addr" && interval:
			out = append(out, prefix)
		case f == "addr":
			out = append(out, addr)
		case f == "addr4":
			out = append(out, "10.88.0.2")
		case f == "addr6":
			out = append(out, "fd00::2")
		case f == "proto":
			out = append(out, "tcp")
		case f == "service" && interval:
			out = append(out, "8000-8100")
		case f == "service":
			out = append(out, "80")
		case f == "ifname":
			out = append(out, `"cni0"`)
		}
	}
	return strings.Join(out, " . ")
}

// TestMapsInTheKernel: every set and map of ours, in a table of each IP
// family, is created as its Spec says and takes an element encoded by
// ElemKeys and ElemData (nftfake refuses, as the kernel does, a key, range
// end or value whose length is not the set's), which reads back as
// written: the bytes our rules' comments name.
func TestMapsInTheKernel(t *testing.T) {
	// The datatypes and flags of some, as nft lists them (as numbers: the
	// fake does not name them). An interval map of a concatenation must
	// say so (concat), or the kernel takes it for one of single values.
	types := map[string]string{
		"ip6/masq":         "set masq { # handle 2\n\t\ttype 0x8 [16 bytes];",
		"ip6/port_dnat":    "type 0x30d [8 bytes] : 0x20d [20 bytes];",
		"ip/hostip_dnat":   "type 0x730d [12 bytes] : 0x1cd [8 bytes];",
		"ip/hairpin_nets":  "type 0x1c7 [8 bytes]; flags interval,concat;",
		"ip6/range_dnat":   "type 0x30d [8 bytes] : 0x8 [16 bytes]; flags interval,concat;",
		"ip/icc_addrs6":    "type 0x8 [16 bytes] : verdict;",
		"ip6/port_ranges":  "type 0x30d [8 bytes] : verdict; flags interval,concat;",
		"ip6/hairpin_masq": "type 0x20c348 [40 bytes]; flags interval,concat;",
		"ip/masq_nets":     "type 0x1c7 [8 bytes]; flags interval,concat;",
		"ip6/hostip_ports": "type 0x830d [24 bytes] : verdict;",
		"ip/ifaces":        "type 0x29 [16 bytes] : verdict;",
		"ip/snat_to":       "type 0x7 [4 bytes] : 0x7 [4 bytes];",
	}
	for _, v4 := range []bool{true, false} {
		tab := nftrule.Table{Family: "ip6", Name: "t"}
		if v4 {
			tab.Family = "ip"
		}
		for _, name := range slices.Sorted(maps.Keys(nftrule.Maps)) {
			m := nftrule.Maps[name]
			el := nftrule.Elem{Set: name, Key: example(v4, m.Interval, m.Fields), Data: example(v4, false, m.Data)}
			t.Run(tab.Family+"/"+name, func(t *testing.T) {
				fake := nftfake.New()
				conn := fake.Conn()
				defer conn.Close()
				key, end, err := nftrule.ElemKeys(tab, el)
				if err != nil {
					t.Fatal(err)
				}
				data, err := nftrule.ElemData(tab, el)
				if err != nil {
					t.Fatal(err)
				}
				b := &netfilter.Batch{}
				b.AddTable(tab)
				b.AddChain(tab, "c", nil)
				b.AddSet(tab, m.Spec(tab))
				if m.Verdict() {
					b.AddElemRange(tab, name, key, end, "c")
				} else {
					b.AddSetElem(tab, name, netfilter.Elem{Key: key, End: end, Data: data, Comment: "c"}, true)
				}
				if err := conn.Apply(b); err != nil {
					t.Fatalf("%s { %s } with element %v: %v", name, m.Text(tab), el, err)
				}
				got, err := conn.MapElems(tab.Proto(), tab.Name, name)
				if err != nil || len(got) != 1 {
					t.Fatalf("MapElems = %v, %v; want one element", got, err)
				}
				if typ := types[tab.Family+"/"+name]; !strings.Contains(fake.Dump(), typ) {
					t.Errorf("the kernel holds %s as\n%s\nwant %q", name, fake.Dump(), typ)
				}
				if !bytes.Equal(got[0].Key, key) || !bytes.Equal(got[0].End, end) || !bytes.Equal(got[0].Data, data) {
					t.Errorf("element %v reads back as %+v, want key %x end %x data %x", el, got[0], key, end, data)
				}
			})
		}
	}
}

// TestMapText: the type of a set or map as nft writes it.
func TestMapText(t *testing.T) {
	ip, ip6 := nftrule.Table{Family: "ip", Name: "t"}, nftrule.Table{Family: "ip6", Name: "t"}
	for _, tc := range []struct {
		table nftrule.Table
		name  string
		want  string
	}{
		{ip, "ports", "inet_proto . inet_service : verdict"},
		{ip6, "hostip_ports", "ipv6_addr . inet_proto . inet_service : verdict"},
		{ip, "port_dnat", "inet_proto . inet_service : ipv4_addr . inet_service"},
		{ip6, "range_dnat", "inet_proto . inet_service : ipv6_addr"},
		{ip6, "masq", "ipv6_addr"},
		{ip6, "icc_addrs4", "ipv4_addr : verdict"},
		{ip, "ifaces", "ifname : verdict"},
	} {
		if got := nftrule.Maps[tc.name].Text(tc.table); got != tc.want {
			t.Errorf("Maps[%q].Text(%s) = %q, want %q", tc.name, tc.table, got, tc.want)
		}
	}
}
