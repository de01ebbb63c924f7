// Package fwtest holds what the tests of the firewall packages share: the
// owners and rules of the golden and backend tests, throwaway network
// namespaces and ruleset listings.
package fwtest

import (
	"net"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/test/sandbox"
)

// CIDR parses s keeping the address's host bits.
func CIDR(t testing.TB, s string) *net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatalf("ParseCIDR(%q): %v", s, err)
	}
	n.IP = ip
	return n
}

// The owners of the tests.
var (
	BridgeOwner = fwapi.Owner{Plugin: fwapi.PluginBridge, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
	PortOwner   = fwapi.Owner{Plugin: fwapi.PluginPortmap, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
)

// PortRules returns dual-stack port mappings with SNAT, changed by mod.
func PortRules(t testing.TB, mod func(*fwapi.PortMaps)) fwapi.Rules {
	pm := &fwapi.PortMaps{
		ContainerV4: CIDR(t, "10.88.0.2/16"),
		ContainerV6: CIDR(t, "fd00:88::2/64"),
		Mappings: []fwapi.PortMapping{
			{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"},
			{HostPort: 5353, ContainerPort: 53, Protocol: "udp"},
		},
		SNAT:    true,
		MarkBit: 13,
	}
	mod(pm)
	return fwapi.Rules{PortMaps: pm}
}

// BridgeRules returns dual-stack masquerade with a spoof check.
func BridgeRules(t testing.TB) fwapi.Rules {
	mac := []byte{0x0a, 0x58, 0, 0, 0, 2}
	return fwapi.Rules{
		Masq:       []fwapi.Masq{{Addr: *CIDR(t, "10.88.0.2/16")}, {Addr: *CIDR(t, "fd00:88::2/64")}},
		SpoofCheck: &fwapi.SpoofCheck{HostIface: "veth1234", MAC: mac, IPs: []net.IP{net.ParseIP("10.88.0.2")}},
	}
}

// Case is one owner with its rules.
type Case struct {
	Name  string
	Owner fwapi.Owner
	Rules fwapi.Rules
}

// RuleCases are the cases of the golden files (<name>.<kind>.golden): a
// name ending in _nft or _ipt holds conditions in that backend's syntax.
func RuleCases(t testing.TB) []Case {
	mac, _ := net.ParseMAC("0a:58:0a:58:00:02")
	return []Case{
		{"masq_v4", BridgeOwner, fwapi.Rules{Masq: []fwapi.Masq{{Addr: *CIDR(t, "10.88.0.2/16")}}}},
		{"masq_dual", BridgeOwner, fwapi.Rules{Masq: []fwapi.Masq{{Addr: *CIDR(t, "10.88.0.2/16")}, {Addr: *CIDR(t, "fd00:88::2/64")}}}},
		{"snat_dual", BridgeOwner, fwapi.Rules{Masq: []fwapi.Masq{
			{Addr: *CIDR(t, "10.88.0.2/16"), Source: net.ParseIP("192.0.2.7")},
			{Addr: *CIDR(t, "fd00:88::2/64"), Source: net.ParseIP("2001:db8::7")}}}},
		{"spoofcheck", BridgeOwner, fwapi.Rules{SpoofCheck: &fwapi.SpoofCheck{HostIface: "veth1234", MAC: mac,
			IPs: []net.IP{net.ParseIP("10.88.0.2"), net.ParseIP("fd00:88::2")}}}},
		{"portmap_v4", PortOwner, PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })},
		{"portmap_v6", PortOwner, PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV4 = nil })},
		{"portmap_dual", PortOwner, PortRules(t, func(p *fwapi.PortMaps) {})},
		{"portmap_hostip", PortOwner, PortRules(t, func(p *fwapi.PortMaps) {
			p.Mappings = []fwapi.PortMapping{
				{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.10")},
				{HostPort: 8443, ContainerPort: 443, Protocol: "tcp", HostIP: net.ParseIP("0.0.0.0")},
				{HostPort: 9090, ContainerPort: 90, Protocol: "sctp", HostIP: net.ParseIP("2001:db8::10")},
			}
		})},
		{"portmap_ranges", PortOwner, PortRules(t, func(p *fwapi.PortMaps) {
			p.Mappings = []fwapi.PortMapping{
				{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"},
				{HostPort: 8000, ContainerPort: 8000, Protocol: "tcp", Range: 101},
				{HostPort: 5000, ContainerPort: 5000, Protocol: "udp", Range: 10, HostIP: net.ParseIP("192.0.2.10")},
				{HostPort: 5005, ContainerPort: 5005, Protocol: "udp", Range: 10, HostIP: net.ParseIP("192.0.2.11")},
				{HostPort: 6000, ContainerPort: 6000, Protocol: "sctp", Range: 5, HostIP: net.ParseIP("2001:db8::10")},
			}
		})},
		{"portmap_snat_off", PortOwner, PortRules(t, func(p *fwapi.PortMaps) { p.SNAT = false })},
		{"portmap_masqall", PortOwner, PortRules(t, func(p *fwapi.PortMaps) { p.MasqAll = true })},
		{"portmap_conditions_nft", PortOwner, PortRules(t, func(p *fwapi.PortMaps) {
			p.ConditionsV4 = []string{"ip", "saddr", "!=", "192.0.2.0/24"}
			p.ConditionsV6 = []string{"ip6", "saddr", "!=", "2001:db8::/32"}
		})},
		{"portmap_conditions_ipt", PortOwner, PortRules(t, func(p *fwapi.PortMaps) {
			p.ConditionsV4 = []string{"!", "-s", "192.0.2.0/24"}
			p.ConditionsV6 = []string{"!", "-s", "2001:db8::/32"}
		})},
		{"portmap_conditions_dest_ipt", PortOwner, PortRules(t, func(p *fwapi.PortMaps) {
			p.ConditionsV4 = []string{"!", "--destination", "10.96.0.0/12"}
			p.ConditionsV6 = []string{"!", "-d", "fd00:96::/108"}
			p.Mappings = []fwapi.PortMapping{
				{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: net.ParseIP("192.0.2.10")},
				{HostPort: 8443, ContainerPort: 443, Protocol: "tcp", HostIP: net.ParseIP("2001:db8::10")},
			}
		})},
		{"portmap_markbit", PortOwner, PortRules(t, func(p *fwapi.PortMaps) { p.MarkBit = 5 })},
		{"portmap_external_mark", PortOwner, PortRules(t, func(p *fwapi.PortMaps) { p.ExternalSetMarkChain = "KUBE-MARK-MASQ" })},
		{"icc_off", BridgeOwner, IsolationRules(func(i *fwapi.Isolation) { i.NoICC = true })},
		{"isolate", BridgeOwner, IsolationRules(func(i *fwapi.Isolation) { i.Isolate = fwapi.IsolateOn })},
		{"isolate_strict_icc_off", BridgeOwner, IsolationRules(func(i *fwapi.Isolation) {
			i.NoICC, i.Isolate, i.Uplinks = true, fwapi.IsolateStrict, []string{"eth1", "eth0"}
		})},
		{"ingress_filter", BridgeOwner, IsolationRules(func(i *fwapi.Isolation) { i.FilterIngress = true })},
		{"ingress_filter_isolate", BridgeOwner, IsolationRules(func(i *fwapi.Isolation) {
			i.FilterIngress, i.Isolate = true, fwapi.IsolateOn
		})},
	}
}

// IsolationRules returns a dual-stack attachment's isolation, changed by mod.
func IsolationRules(mod func(*fwapi.Isolation)) fwapi.Rules {
	iso := &fwapi.Isolation{Bridge: "cni0", HostIface: "veth1234",
		IPs: []net.IP{net.ParseIP("10.88.0.2"), net.ParseIP("fd00:88::2")}}
	mod(iso)
	return fwapi.Rules{Isolation: iso}
}

// InNS runs fn inside a fresh network namespace, so each test starts from
// an empty ruleset.
func InNS(t *testing.T, fn func()) {
	t.Helper()
	n := sandbox.NewNS(t)
	if err := n.Do(func() error { fn(); return nil }); err != nil {
		t.Fatalf("entering test namespace: %v", err)
	}
}

// Ruleset returns `nft list ruleset`.
func Ruleset(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v: %s", err, out)
	}
	return string(out)
}

var handleRE = regexp.MustCompile(` # handle \d+`)

// Listing returns the ruleset without handles.
func Listing(t testing.TB) string {
	t.Helper()
	return sortElements(handleRE.ReplaceAllString(Ruleset(t), ""))
}

// elementsRE is a set's element list as nft prints it, over several lines.
var elementsRE = regexp.MustCompile(`(?s)elements = \{ (.*?) \}\n`)

// sortElements puts each set's elements in one sorted line: the kernel
// lists an interval set's elements in an order that depends on how they
// were added (one batch, or one command each), not on what they are.
func sortElements(listing string) string {
	return elementsRE.ReplaceAllStringFunc(listing, func(m string) string {
		inner := elementsRE.FindStringSubmatch(m)[1]
		var elems []string
		for _, e := range strings.Split(inner, ",") {
			elems = append(elems, strings.TrimSpace(e))
		}
		sort.Strings(elems)
		return "elements = { " + strings.Join(elems, ", ") + " }\n"
	})
}

// RulesetHandles returns `nft -a list ruleset`: rules with their handles.
func RulesetHandles(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("nft", "-a", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft -a list ruleset: %v: %s", err, out)
	}
	return string(out)
}

// AssertNoOwnerRules fails when any owner chain or element is left.
func AssertNoOwnerRules(t testing.TB) {
	t.Helper()
	rs := Ruleset(t)
	for _, marker := range []string{"cnisuite 0", "CNIS-", "jump pm", "jump mq", "jump sc", "jump pmq", "jump ic", "jump ih", "jump if-",
		`comment "cnisuite `, `comment "pm-`, `comment "pmq-`, `comment "mq-`, `comment "ms-`, `comment "ps-`} {
		if strings.Contains(rs, marker) {
			t.Errorf("ruleset still holds %q:\n%s", marker, rs)
			return
		}
	}
}
