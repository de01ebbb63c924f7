package protocol

import (
	"fmt"
	"net"

	"cnisuite/test/fuzz/jsontree"
)

// result checks a result of spec 0.3.0 or later against the schema.
func (v *validator) result(root *jsontree.Object) {
	ifaces := v.objects("$.interfaces", root, "interfaces")
	for i, o := range ifaces {
		v.iface(fmt.Sprintf("$.interfaces[%d]", i), o)
	}
	for i, o := range v.objects("$.ips", root, "ips") {
		v.ipConfig(fmt.Sprintf("$.ips[%d]", i), o, len(ifaces))
	}
	for i, o := range v.objects("$.routes", root, "routes") {
		v.route(fmt.Sprintf("$.routes[%d]", i), o)
	}
	v.dns("$.dns", root)
}

// iface checks the schema's Interface.
func (v *validator) iface(path string, o *jsontree.Object) {
	v.str(path+".name", o, "name", true)
	if mac, ok := v.str(path+".mac", o, "mac", false); ok && !macPattern.MatchString(mac) {
		v.fail("%s.mac %q does not match %s", path, mac, macPattern)
	}
	v.integer(path+".mtu", o, "mtu", 68, 65535)
	v.str(path+".sandbox", o, "sandbox", false)
	v.str(path+".socketPath", o, "socketPath", false)
	v.str(path+".pciID", o, "pciID", false)
}

// ipConfig checks the schema's IPConfig; the interface index must point
// into the result's interfaces (spec).
func (v *validator) ipConfig(path string, o *jsontree.Object, nIfaces int) {
	addr, ok := v.str(path+".address", o, "address", true)
	v.cidr(path+".address", addr, ok)
	gw, ok := v.str(path+".gateway", o, "gateway", false)
	v.ip(path+".gateway", gw, ok)
	if idx, ok := v.integer(path+".interface", o, "interface", 0, -1); ok && idx >= float64(nIfaces) {
		v.fail("spec: %s.interface %v points past the %d interfaces", path, idx, nIfaces)
	}
	if ver, ok := v.str(path+".version", o, "version", false); ok {
		ip, _, err := net.ParseCIDR(addr)
		if err == nil && (ver == "4") != (ip.To4() != nil) || ver != "4" && ver != "6" {
			v.fail("spec: %s.version %q does not match address %q", path, ver, addr)
		}
	}
}

// route checks the schema's Route.
func (v *validator) route(path string, o *jsontree.Object) {
	dst, ok := v.str(path+".dst", o, "dst", true)
	v.cidr(path+".dst", dst, ok)
	gw, ok := v.str(path+".gw", o, "gw", false)
	v.ip(path+".gw", gw, ok)
	v.integer(path+".mtu", o, "mtu", 68, 65535)
	v.integer(path+".advmss", o, "advmss", 1, -1)
}

// dns checks the schema's DNS.
func (v *validator) dns(path string, parent *jsontree.Object) {
	x, ok := parent.Get("dns")
	if !ok {
		return
	}
	o, ok := x.(*jsontree.Object)
	if !ok {
		v.fail("%s: a JSON %s, want an object", path, jsontree.TypeName(x))
		return
	}
	v.strings(path+".nameservers", o, "nameservers")
	v.str(path+".domain", o, "domain", false)
	v.strings(path+".search", o, "search")
	v.strings(path+".options", o, "options")
}

// oldResult checks the 0.1.0/0.2.0 shape: ip4 and ip6 objects with ip,
// gateway and routes, and dns.
func (v *validator) oldResult(root *jsontree.Object) {
	for _, fam := range []string{"ip4", "ip6"} {
		x, ok := root.Get(fam)
		if !ok {
			continue
		}
		o, ok := x.(*jsontree.Object)
		if !ok {
			v.fail("$.%s: a JSON %s, want an object", fam, jsontree.TypeName(x))
			continue
		}
		path := "$." + fam
		addr, ok := v.str(path+".ip", o, "ip", true)
		v.cidr(path+".ip", addr, ok)
		if ip, _, err := net.ParseCIDR(addr); err == nil && (ip.To4() != nil) != (fam == "ip4") {
			v.fail("spec: %s.ip %q is of the other family", path, addr)
		}
		gw, ok := v.str(path+".gateway", o, "gateway", false)
		v.ip(path+".gateway", gw, ok)
		for i, r := range v.objects(path+".routes", o, "routes") {
			v.route(fmt.Sprintf("%s.routes[%d]", path, i), r)
		}
	}
	if _, ok := root.Get("interfaces"); ok {
		v.fail("spec: $.interfaces in a result of version below 0.3.0")
	}
	if _, ok := root.Get("ips"); ok {
		v.fail("spec: $.ips in a result of version below 0.3.0")
	}
	v.dns("$.dns", root)
}
