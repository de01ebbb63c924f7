package fuzz

import (
	"cnisuite/test/fuzz/jsontree"
)

// Paths are the places an input's configuration names: all of them under
// SafeRoots, fresh for every input.
type Paths struct {
	// DataDir is the state directory (host-local's and tuning's dataDir).
	DataDir string
	// ResolvConf is a resolv.conf for host-local to read.
	ResolvConf string
	// NetNS is the container's network namespace.
	NetNS string
	// Root, when set, takes the place of PlaceholderRoot in what a mutation
	// left of a damaged placeholder, so that it lands in the input's own
	// directory (a tmpfs in the sandbox) and never on the machine's /tmp.
	Root string
}

// The container side of tuning's and portmap's node: a veth pair made by
// the test, the node end fzh0 in the node namespace and eth0 in the
// container, with these addresses and MACs.
const (
	NodeIfName   = "fzh0"
	NodeMAC      = "0a:58:0a:4d:00:01"
	NodeAddr4    = "10.77.0.1/24"
	NodeAddr6    = "fd77::1/64"
	ContainerMAC = "0a:58:0a:4d:00:02"
	CtrAddr4     = "10.77.0.2/24"
	CtrAddr6     = "fd77::2/64"
	// BaseBridges are the bridges the bridge bases use; the runner removes
	// them, and any other bridge a mutated name made, after each input.
	BaseBridgeL3 = "fzbr0"
	BaseBridgeL2 = "fzbr1"
)

// Base is a named valid configuration of a plugin, using every key that
// this variant can combine with the others.
type Base struct {
	Name string
	Tree func(p Paths) any
}

// Bases lists the base configurations of every plugin. Each must succeed
// ADD, CHECK, STATUS, GC and DEL in a bare node namespace (the runner
// checks this before mutating it). Keys that cannot coexist (promiscMode
// and hairpinMode, an IPAM and disableContainerInterface, markMasqBit and
// externalSetMarkChain) are spread over the variants.
var Bases = map[string][]Base{
	"bridge": {
		// As users write it (examples/, podman, Kubernetes): no backend key.
		{"l3-default", func(p Paths) any { return bridgeL3(p, "iptables").(*jsontree.Object).Without("ipMasqBackend") }},
		{"l3-iptables", func(p Paths) any { return bridgeL3(p, "iptables") }},
		{"l3-nftables", func(p Paths) any { return bridgeL3(p, "nftables") }},
		{"l2", bridgeL2},
		{"l3-node-options", bridgeNodeOptions},
		{"l3-host-veth-name", bridgeHostVethName},
	},
	"host-local": {{"ranges", hostLocal}, {"several-static", hostLocalSeveral}},
	"tuning":     {{"all-keys", tuning}},
	"portmap": {
		// As users write it: no backend key and no conditions, so that
		// iptables-nft rules go over netlink (conditions need iptables-restore).
		{"default", func(p Paths) any {
			return portmap(p, "iptables").(*jsontree.Object).Without("backend").Without("conditionsV4").Without("conditionsV6")
		}},
		{"iptables", func(p Paths) any { return portmap(p, "iptables") }},
		{"nftables", func(p Paths) any { return portmap(p, "nftables") }},
		{"masqall-nftables", portmapMasqAll},
		{"ranges-default", func(p Paths) any { return portmapRanges(p, "") }},
		{"ranges-iptables", func(p Paths) any { return portmapRanges(p, "iptables") }},
		{"ranges-nftables", func(p Paths) any { return portmapRanges(p, "nftables") }},
	},
	"loopback": {
		{"plain", func(Paths) any { return jsontree.Obj("cniVersion", "1.1.0", "name", "fzlo", "type", "loopback") }},
		{"chained", func(p Paths) any {
			return jsontree.Obj("cniVersion", "1.1.0", "name", "fzlo", "type", "loopback", "prevResult", prevResult(p))
		}},
	},
}

// Plugins are the plugins fuzzed, in order.
var Plugins = []string{"bridge", "host-local", "tuning", "portmap", "loopback"}

// bridgeL3 is bridge with host-local, gateway, masquerade (backend given),
// spoof check, isolation (icc off, isolate strict) and every port flag that
// goes with hairpin mode.
func bridgeL3(p Paths, backend string) any {
	return jsontree.Obj("cniVersion", "1.1.0", "name", "fznet", "type", "bridge",
		"bridge", BaseBridgeL3, "isGateway", true, "isDefaultGateway", true, "forceAddress", true,
		"ipMasq", true, "ipMasqBackend", backend, "mtu", 1400, "hairpinMode", true,
		"promiscMode", false, "vlan", 0, "vlanTrunk", jsontree.Arr(), "preserveDefaultVlan", false,
		"macspoofchk", true, "enabledad", false, "disableContainerInterface", false,
		"portIsolation", true, "icc", false, "isolate", "strict", "capabilities", jsontree.Obj("mac", true),
		"ipam", jsontree.Obj("type", "host-local",
			"ranges", jsontree.Arr(
				jsontree.Arr(jsontree.Obj("subnet", "10.20.0.0/24", "rangeStart", "10.20.0.10", "rangeEnd", "10.20.0.200", "gateway", "10.20.0.1")),
				jsontree.Arr(jsontree.Obj("subnet", "fd20::/64"))),
			"routes", jsontree.Arr(jsontree.Obj("dst", "10.99.0.0/16", "gw", "10.20.0.1"), jsontree.Obj("dst", "fd99::/64")),
			"dataDir", p.DataDir, "resolvConf", p.ResolvConf),
		"dns", jsontree.Obj("nameservers", jsontree.Arr("10.20.0.53"), "domain", "fz.local", "search", jsontree.Arr("fz.local"), "options", jsontree.Arr("ndots:2")),
		"args", jsontree.Obj("cni", jsontree.Obj("mac", "0a:58:0a:14:00:07")),
		"runtimeConfig", jsontree.Obj("mac", "0a:58:0a:14:00:09"))
}

// bridgeL2 is bridge at layer 2: promiscuous, container interface down,
// DAD on, no IPAM.
func bridgeL2(p Paths) any {
	return jsontree.Obj("cniVersion", "1.1.0", "name", "fzl2", "type", "bridge",
		"bridge", BaseBridgeL2, "isGateway", false, "isDefaultGateway", false, "forceAddress", false,
		"ipMasq", false, "ipMasqBackend", "nftables", "mtu", 9000, "hairpinMode", false,
		"promiscMode", true, "vlan", 0, "vlanTrunk", jsontree.Arr(), "preserveDefaultVlan", true,
		"macspoofchk", true, "enabledad", true, "disableContainerInterface", true,
		"portIsolation", false, "ipam", jsontree.Obj(), "dns", jsontree.Obj(),
		"args", jsontree.Obj("cni", jsontree.Obj("mac", "0a:58:0a:15:00:07")))
}

// hostLocal uses every range source: ipRanges, the deprecated top-level
// range and two range sets; requested addresses, routes with every field.
func hostLocal(p Paths) any {
	return jsontree.Obj("cniVersion", "1.1.0", "name", "fzhl", "type", "bridge",
		"capabilities", jsontree.Obj("ips", true, "ipRanges", true),
		"ipam", jsontree.Obj("type", "host-local",
			"subnet", "10.32.0.0/24", "rangeStart", "10.32.0.20", "rangeEnd", "10.32.0.30", "gateway", "10.32.0.1",
			"ranges", jsontree.Arr(
				jsontree.Arr(jsontree.Obj("subnet", "10.33.0.0/24", "rangeStart", "10.33.0.10", "rangeEnd", "10.33.0.250", "gateway", "10.33.0.1"),
					jsontree.Obj("subnet", "10.33.1.0/24")),
				jsontree.Arr(jsontree.Obj("subnet", "fd33::/64", "rangeStart", "fd33::10", "rangeEnd", "fd33::ffff", "gateway", "fd33::1"))),
			"routes", jsontree.Arr(
				jsontree.Obj("dst", "0.0.0.0/0", "gw", "10.33.0.1", "mtu", 1400, "advmss", 1360, "priority", 100, "table", 100, "scope", 0),
				jsontree.Obj("dst", "::/0")),
			"dataDir", p.DataDir, "resolvConf", p.ResolvConf),
		"runtimeConfig", jsontree.Obj("ips", jsontree.Arr("10.33.0.50/24"), "ipRanges", jsontree.Arr(jsontree.Arr(jsontree.Obj("subnet", "10.31.0.0/24")))),
		"args", jsontree.Obj("cni", jsontree.Obj("ips", jsontree.Arr("fd33::50"))))
}

// tuning sets every sysctl spelling, every link attribute, features by
// group and by kernel name, and channel counts, and overrides them from
// runtimeConfig and args.cni. The channel counts are 1: the veth's
// maximum is the number of possible CPUs, which may be 1.
func tuning(p Paths) any {
	return jsontree.Obj("cniVersion", "1.1.0", "name", "fztun", "type", "tuning",
		"capabilities", jsontree.Obj("mac", true),
		"sysctl", jsontree.Obj("net.ipv4.conf.IFNAME.arp_ignore", "1", "net/ipv4/conf/IFNAME/rp_filter", "2",
			"net.core.somaxconn", "512", "net.ipv6.conf.IFNAME.accept_ra", "0"),
		"mac", "0a:58:0a:4d:00:21", "mtu", 1400, "promisc", true, "allmulti", true, "txQLen", 2000,
		"features", jsontree.Obj("tx-checksumming", false, "tx-tcp-segmentation", false, "rx-gro", true,
			"generic-receive-offload", true, "tx-nocache-copy", true),
		"channels", jsontree.Obj("rx", 1, "tx", 1),
		"dataDir", p.DataDir,
		"runtimeConfig", jsontree.Obj("mac", "0a:58:0a:4d:00:22"),
		"args", jsontree.Obj("cni", jsontree.Obj("sysctl", jsontree.Obj("net.ipv4.conf.IFNAME.arp_announce", "2"),
			"mac", "0a:58:0a:4d:00:23", "mtu", 1450, "promisc", true, "allmulti", false, "txQLen", 1000,
			"features", jsontree.Obj("tx-nocache-copy", false, "scatter-gather", true), "channels", jsontree.Obj("tx", 1))),
		"prevResult", prevResult(p))
}

// portmap maps TCP, UDP, SCTP, with and without hostIP, with conditions
// in the syntax of backend.
func portmap(p Paths, backend string) any {
	c4, c6 := jsontree.Arr("-m", "mark", "!", "--mark", "0x100000/0x100000"), jsontree.Arr("-m", "mark", "!", "--mark", "0x100000/0x100000")
	if backend == "nftables" {
		c4, c6 = jsontree.Arr("ip", "saddr", "!=", "192.0.2.1"), jsontree.Arr("ip6", "saddr", "!=", "2001:db8::1")
	}
	return jsontree.Obj("cniVersion", "1.1.0", "name", "fzpm", "type", "portmap",
		"capabilities", jsontree.Obj("portMappings", true),
		"snat", true, "masqAll", false, "markMasqBit", 13,
		"conditionsV4", c4, "conditionsV6", c6, "backend", backend,
		"runtimeConfig", jsontree.Obj("portMappings", portMappings()),
		"prevResult", prevResult(p))
}

// portmapMasqAll masquerades every source instead of snat.
func portmapMasqAll(p Paths) any {
	return jsontree.Obj("cniVersion", "1.1.0", "name", "fzpm", "type", "portmap",
		"capabilities", jsontree.Obj("portMappings", true), "snat", false, "masqAll", true,
		"backend", "nftables", "runtimeConfig", jsontree.Obj("portMappings", portMappings()),
		"prevResult", prevResult(p))
}

// portMappings are the runtime's portMappings capability.
func portMappings() any {
	return jsontree.Arr(
		jsontree.Obj("hostPort", 8080, "containerPort", 80, "protocol", "tcp"),
		jsontree.Obj("hostPort", 5353, "containerPort", 53, "protocol", "udp", "hostIP", "10.77.0.1"),
		jsontree.Obj("hostPort", 9132, "containerPort", 132, "protocol", "sctp"),
		jsontree.Obj("hostPort", 8443, "containerPort", 443, "protocol", "TCP", "hostIP", "::"))
}

// prevResult is what a main plugin would have returned for the test's
// veth pair: host end, container end, both families, routes and DNS.
func prevResult(p Paths) any {
	return jsontree.Obj("cniVersion", "1.1.0",
		"interfaces", jsontree.Arr(
			jsontree.Obj("name", NodeIfName, "mac", NodeMAC),
			jsontree.Obj("name", "eth0", "mac", ContainerMAC, "mtu", 1500, "sandbox", p.NetNS)),
		"ips", jsontree.Arr(
			jsontree.Obj("address", CtrAddr4, "gateway", "10.77.0.1", "interface", 1),
			jsontree.Obj("address", CtrAddr6, "gateway", "fd77::1", "interface", 1)),
		"routes", jsontree.Arr(jsontree.Obj("dst", "0.0.0.0/0", "gw", "10.77.0.1"), jsontree.Obj("dst", "::/0", "gw", "fd77::1")),
		"dns", jsontree.Obj("nameservers", jsontree.Arr("10.77.0.53"), "domain", "fz.local",
			"search", jsontree.Arr("fz.local", "svc.fz.local"), "options", jsontree.Arr("ndots:5")))
}
