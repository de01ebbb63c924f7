package fuzz

import (
	"cnisuite/test/fuzz/jsontree"
)

// bridgeNodeOptions is bridge with the keys netavark and Docker users
// expect (docs/coming-from-netavark-or-docker.md): MTU from the uplink,
// SNAT to a chosen source per family, default-route metrics, a host-side
// veth prefix, the bridge removed with its last port, the ingress filter.
func bridgeNodeOptions(p Paths) any {
	o := bridgeL3(p, "nftables").(*jsontree.Object).Without("ipMasqBackend").Without("mtu")
	o.Set("mtuFromUplink", true)
	o.Set("ipMasqSourceIPv4", "10.77.0.1")
	o.Set("ipMasqSourceIPv6", "fd77::1")
	o.Set("defaultRouteMetric", 100)
	o.Set("defaultRouteMetricIPv6", 200)
	o.Set("hostVethPrefix", "fzv")
	o.Set("removeEmptyBridge", true)
	o.Set("ingressFilter", true)
	return o
}

// bridgeHostVethName asks for an exact host-side veth name, with the
// ingress filter on the iptables backend.
func bridgeHostVethName(p Paths) any {
	o := bridgeL3(p, "iptables").(*jsontree.Object).Without("ipMasqBackend")
	o.Set("ingressFilter", true)
	o.Set("args", jsontree.Obj("cni", jsontree.Obj("mac", "0a:58:0a:14:00:07", "hostVethName", "fzpod0")))
	return o
}

// hostLocalSeveral asks for three addresses of one range set and one of
// another.
func hostLocalSeveral(p Paths) any {
	return jsontree.Obj("cniVersion", "1.1.0", "name", "fzhl", "type", "bridge",
		"ipam", jsontree.Obj("type", "host-local",
			"ranges", jsontree.Arr(jsontree.Arr(jsontree.Obj("subnet", "10.34.0.0/24")), jsontree.Arr(jsontree.Obj("subnet", "fd34::/64"))),
			"dataDir", p.DataDir, "resolvConf", p.ResolvConf),
		"args", jsontree.Obj("cni", jsontree.Obj("ips", jsontree.Arr("10.34.0.10", "10.34.0.11", "10.34.0.12", "fd34::10"))))
}

// portmapRanges maps port ranges (netavark's range key, which the
// configuration allows) beside single ports: TCP every address, UDP on a hostIP, SCTP, a range of one; with
// backend "" the configuration has no backend key, as users write it.
func portmapRanges(p Paths, backend string) any {
	o := jsontree.Obj("cniVersion", "1.1.0", "name", "fzpm", "type", "portmap",
		"capabilities", jsontree.Obj("portMappings", true), "allowPortRanges", true,
		"runtimeConfig", jsontree.Obj("portMappings", jsontree.Arr(
			jsontree.Obj("hostPort", 8000, "containerPort", 8000, "protocol", "tcp", "range", 101),
			jsontree.Obj("hostPort", 5000, "containerPort", 5000, "protocol", "udp", "hostIP", "10.77.0.1", "range", 10),
			jsontree.Obj("hostPort", 6000, "containerPort", 6000, "protocol", "sctp", "range", 5),
			jsontree.Obj("hostPort", 8443, "containerPort", 443, "protocol", "tcp", "range", 1),
			jsontree.Obj("hostPort", 9000, "containerPort", 90, "protocol", "udp"))),
		"prevResult", prevResult(p))
	if backend != "" {
		o.Set("backend", backend)
	}
	return o
}
