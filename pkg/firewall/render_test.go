package firewall

import (
	"net"
	"strings"
	"testing"

	"cnisuite/test/golden"
)

func cidr(t *testing.T, s string) *net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatalf("ParseCIDR(%q): %v", s, err)
	}
	n.IP = ip
	return n
}

var (
	bridgeOwner = Owner{Plugin: PluginBridge, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
	portOwner   = Owner{Plugin: PluginPortmap, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
)

func portRules(t *testing.T, mod func(*PortMaps)) Rules {
	pm := &PortMaps{
		ContainerV4: cidr(t, "10.88.0.2/16"),
		ContainerV6: cidr(t, "fd00:88::2/64"),
		Mappings: []PortMapping{
			{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"},
			{HostPort: 5353, ContainerPort: 53, Protocol: "udp"},
		},
		SNAT:    true,
		MarkBit: 13,
	}
	mod(pm)
	return Rules{PortMaps: pm}
}

func ruleCases(t *testing.T) []struct {
	name  string
	owner Owner
	rules Rules
} {
	mac, _ := net.ParseMAC("0a:58:0a:58:00:02")
	return []struct {
		name  string
		owner Owner
		rules Rules
	}{
		{"masq_v4", bridgeOwner, Rules{Masq: []Masq{{Addr: *cidr(t, "10.88.0.2/16")}}}},
		{"masq_dual", bridgeOwner, Rules{Masq: []Masq{{Addr: *cidr(t, "10.88.0.2/16")}, {Addr: *cidr(t, "fd00:88::2/64")}}}},
		{"spoofcheck", bridgeOwner, Rules{SpoofCheck: &SpoofCheck{HostIface: "veth1234", MAC: mac,
			IPs: []net.IP{net.ParseIP("10.88.0.2"), net.ParseIP("fd00:88::2")}}}},
		{"portmap_v4", portOwner, portRules(t, func(p *PortMaps) { p.ContainerV6 = nil })},
		{"portmap_v6", portOwner, portRules(t, func(p *PortMaps) { p.ContainerV4 = nil })},
		{"portmap_dual", portOwner, portRules(t, func(p *PortMaps) {})},
		{"portmap_hostip", portOwner, portRules(t, func(p *PortMaps) {
			p.Mappings = []PortMapping{
				{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.10")},
				{HostPort: 8443, ContainerPort: 443, Protocol: "tcp", HostIP: net.ParseIP("0.0.0.0")},
				{HostPort: 9090, ContainerPort: 90, Protocol: "sctp", HostIP: net.ParseIP("2001:db8::10")},
			}
		})},
		{"portmap_snat_off", portOwner, portRules(t, func(p *PortMaps) { p.SNAT = false })},
		{"portmap_masqall", portOwner, portRules(t, func(p *PortMaps) { p.MasqAll = true })},
		{"portmap_conditions_nft", portOwner, portRules(t, func(p *PortMaps) {
			p.ConditionsV4 = []string{"ip", "saddr", "!=", "192.0.2.0/24"}
			p.ConditionsV6 = []string{"ip6", "saddr", "!=", "2001:db8::/32"}
		})},
		{"portmap_conditions_ipt", portOwner, portRules(t, func(p *PortMaps) {
			p.ConditionsV4 = []string{"!", "-s", "192.0.2.0/24"}
			p.ConditionsV6 = []string{"!", "-s", "2001:db8::/32"}
		})},
		{"portmap_markbit", portOwner, portRules(t, func(p *PortMaps) { p.MarkBit = 5 })},
		{"portmap_external_mark", portOwner, portRules(t, func(p *PortMaps) { p.ExternalSetMarkChain = "KUBE-MARK-MASQ" })},
	}
}

func TestRender(t *testing.T) {
	for _, tc := range ruleCases(t) {
		for _, kind := range []string{KindNFTables, KindIPTables} {
			if strings.HasSuffix(tc.name, "_nft") && kind == KindIPTables ||
				strings.HasSuffix(tc.name, "_ipt") && kind == KindNFTables {
				continue
			}
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				golden.Check(t, tc.name+"."+kind, Render(kind, tc.owner, tc.rules))
			})
		}
	}
}

func TestNFTEnsureScript(t *testing.T) {
	old := nftDesired(portOwner, portRules(t, func(p *PortMaps) { p.ContainerV6 = nil }))
	var existing []nftExisting
	for _, c := range old {
		e := nftExisting{table: c.table, name: c.name}
		for _, r := range c.rules {
			e.comments = append(e.comments, r.comment())
		}
		existing = append(existing, e)
	}
	tests := []struct {
		name  string
		rules Rules
	}{
		{"same", portRules(t, func(p *PortMaps) { p.ContainerV6 = nil })},
		{"port_changed_snat_off", portRules(t, func(p *PortMaps) {
			p.ContainerV6, p.SNAT = nil, false
			p.Mappings = p.Mappings[:1]
			p.Mappings[0].HostPort = 8081
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			golden.Check(t, "nft_update_"+tc.name, nftEnsureScript(nftDesired(portOwner, tc.rules), existing))
		})
	}
	t.Run("remove", func(t *testing.T) {
		golden.Check(t, "nft_remove", nftRemoveScript(existing, false))
		golden.Check(t, "nft_remove_safe", nftRemoveScript(existing, true))
	})
}

func TestIPTPayloads(t *testing.T) {
	r := Rules{Masq: []Masq{{Addr: *cidr(t, "10.88.0.2/16")}}}
	desired := iptDesired(bridgeOwner, r, true)
	existing := map[string][]string{desired[0].chain: desired[0].rules}
	moved := Rules{Masq: []Masq{{Addr: *cidr(t, "10.88.0.3/16")}}}
	golden.Check(t, "ipt_update_masq", iptEnsurePayload(bridgeOwner, iptDesired(bridgeOwner, moved, true), existing))
	golden.Check(t, "ipt_remove_masq", iptRemovePayload(bridgeOwner, existing))
	pd := iptDesired(portOwner, portRules(t, func(*PortMaps) {}), true)
	pe := withCompanions(portOwner, map[string][]string{pd[0].chain: pd[0].rules})
	golden.Check(t, "ipt_remove_portmap", iptRemovePayload(portOwner, pe))
}

func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{refMasqChain(Owner{Network: "test", ContainerID: "1234"}), "CNI-2bbe0c48b91a7d1b8a6753a8"},
		{refDNChain(Owner{Network: "test", ContainerID: "1234"}), "CNI-DN-2bbe0c48b91a7d1b8a675"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("reference chain name = %q, want %q", tc.got, tc.want)
		}
	}
	for _, p := range []string{iptPrefixMasq, iptPrefixDNAT, iptPrefixHairpin} {
		if n := iptChainName(p, portOwner); len(n) != 28 {
			t.Errorf("iptChainName(%q) = %q: %d characters, want 28", p, n, len(n))
		}
	}
}

func TestParseNFTComment(t *testing.T) {
	r := nftRule{text: "tcp dport 1 dnat to 10.0.0.1:2", elem: &nftElem{set: "ports", key: "tcp . 1"}}
	d, el, ok := parseNFTComment(r.comment())
	if !ok || el == nil || *el != *r.elem || len(d) != 8 {
		t.Errorf("parseNFTComment(%q) = %q, %v, %v", r.comment(), d, el, ok)
	}
	if _, _, ok := parseNFTComment("ctr1"); ok {
		t.Errorf("parseNFTComment(%q) accepted a foreign comment", "ctr1")
	}
}

func TestSplitSpec(t *testing.T) {
	got := splitSpec(`-m comment --comment "cnisuite a/b" -j X`)
	want := []string{"-m", "comment", "--comment", "cnisuite a/b", "-j", "X"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("splitSpec = %q, want %q", got, want)
	}
}
