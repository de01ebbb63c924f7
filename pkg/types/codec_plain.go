package types

import (
	"bytes"
	"encoding/json"
	"net"

	"cnisuite/pkg/jsonscan"
	"cnisuite/pkg/version"
)

// The plain path: results at 1.0.0 and 1.1.0, the versions runtimes use,
// read and written without encoding/json's reflection (pkg/jsonscan says
// why). It takes the plain shapes only and reports false on anything else;
// decodeResult and Encode then take the general path, which stays the rule
// (FuzzPlainResult checks that both paths agree wherever the plain one
// answers).

// decodePlain reads a 1.0.0/1.1.0 result, before validation; the version is
// the document's or fallback.
func decodePlain(data []byte, fallback string) (*Result, bool) {
	rd := jsonscan.NewReader(data)
	r := &Result{CNIVersion: fallback}
	rd.Fields(r.plainFields())
	if fam, err := version.FamilyOf(r.CNIVersion); err != nil || fam != version.Family100 {
		return nil, false
	}
	return r, rd.OK()
}

func (r *Result) plainFields() []jsonscan.Field {
	return []jsonscan.Field{
		{Key: "cniVersion", Into: func(rd *jsonscan.Reader) {
			if v := rd.String(); v != "" {
				r.CNIVersion = v
			}
		}},
		{Key: "interfaces", Into: func(rd *jsonscan.Reader) {
			rd.Array(func() {
				in := &Interface{}
				rd.Fields(in.plainFields())
				r.Interfaces = append(r.Interfaces, in)
			})
		}},
		{Key: "ips", Into: func(rd *jsonscan.Reader) {
			rd.Array(func() {
				ip := &IPConfig{}
				rd.Fields(ip.plainFields())
				r.IPs = append(r.IPs, ip)
			})
		}},
		{Key: "routes", Into: func(rd *jsonscan.Reader) {
			r.Routes = []*Route{} // [] is an empty list, as encoding/json reads it
			rd.Array(func() { r.Routes = append(r.Routes, plainRoute(rd)) })
		}},
		{Key: "dns", Into: func(rd *jsonscan.Reader) { r.DNS = plainDNS(rd) }},
	}
}

func (in *Interface) plainFields() []jsonscan.Field {
	return []jsonscan.Field{{Key: "name", Into: &in.Name}, {Key: "mac", Into: &in.Mac}, {Key: "mtu", Into: &in.Mtu},
		{Key: "sandbox", Into: &in.Sandbox}, {Key: "socketPath", Into: &in.SocketPath}, {Key: "pciID", Into: &in.PciID}}
}

func (ip *IPConfig) plainFields() []jsonscan.Field {
	return []jsonscan.Field{{Key: "interface", Into: &ip.Interface},
		{Key: "address", Into: func(rd *jsonscan.Reader) { ip.Address = plainCIDR(rd) }},
		{Key: "gateway", Into: func(rd *jsonscan.Reader) { ip.Gateway = plainIP4or6(rd) }}}
}

func plainRoute(rd *jsonscan.Reader) *Route {
	rt := &Route{}
	rd.Fields(rt.plainFields())
	return rt
}

func (rt *Route) plainFields() []jsonscan.Field {
	return []jsonscan.Field{
		{Key: "dst", Into: func(rd *jsonscan.Reader) { rt.Dst = plainCIDR(rd) }},
		{Key: "gw", Into: func(rd *jsonscan.Reader) { rt.GW = plainIP4or6(rd) }},
		{Key: "mtu", Into: &rt.MTU}, {Key: "advmss", Into: &rt.AdvMSS}, {Key: "priority", Into: &rt.Priority},
		{Key: "table", Into: &rt.Table}, {Key: "scope", Into: &rt.Scope}}
}

func plainDNS(rd *jsonscan.Reader) DNS {
	var d DNS
	rd.Fields(d.plainFields())
	return d
}

func (d *DNS) plainFields() []jsonscan.Field {
	return []jsonscan.Field{{Key: "nameservers", Into: &d.Nameservers}, {Key: "domain", Into: &d.Domain},
		{Key: "search", Into: &d.Search}, {Key: "options", Into: &d.Options}}
}

// plainCIDR reads an address in CIDR form, as IPNet's UnmarshalJSON does.
func plainCIDR(rd *jsonscan.Reader) net.IPNet {
	s := rd.String()
	if !rd.OK() {
		return net.IPNet{}
	}
	p, err := ParseCIDR(s)
	if err != nil {
		rd.Fail()
		return net.IPNet{}
	}
	return *p
}

// plainIP4or6 reads an address as net.IP's UnmarshalText does ("" is none),
// in the 4-byte form for IPv4.
func plainIP4or6(rd *jsonscan.Reader) net.IP {
	s := rd.String()
	if !rd.OK() || s == "" {
		return nil
	}
	ip := net.ParseIP(s)
	if ip == nil {
		rd.Fail()
	}
	return normIP(ip)
}

// encodePlain writes r at v (1.0.0 or 1.1.0) as Encode's general path
// does, byte for byte.
func encodePlain(r *Result, v string) ([]byte, bool) {
	o := jsonscan.NewObject(nil)
	o.String("cniVersion", v)
	o.List("interfaces", len(r.Interfaces), func(b []byte, i int) ([]byte, bool) {
		return appendIface(b, r.Interfaces[i])
	})
	o.List("ips", len(r.IPs), func(b []byte, i int) ([]byte, bool) { return appendIP(b, r.IPs[i]) })
	o.List("routes", len(r.Routes), func(b []byte, i int) ([]byte, bool) { return appendRoute(b, r.Routes[i]) })
	if !r.DNS.IsEmpty() {
		o.Key("dns")
		o.AppendValue(func(b []byte) []byte { return appendDNS(b, &r.DNS) })
	}
	compact, ok := o.Close()
	var out bytes.Buffer
	if !ok || json.Indent(&out, compact, "", "    ") != nil {
		return nil, false
	}
	return out.Bytes(), true
}

func appendIface(b []byte, in *Interface) ([]byte, bool) {
	if in == nil {
		return b, false // encode100 would fail on it
	}
	o := jsonscan.NewObject(b)
	o.String("name", in.Name)
	o.OptString("mac", in.Mac)
	o.OptInt("mtu", in.Mtu)
	o.OptString("sandbox", in.Sandbox)
	o.OptString("socketPath", in.SocketPath)
	o.OptString("pciID", in.PciID)
	return o.Close()
}

func appendIP(b []byte, ip *IPConfig) ([]byte, bool) {
	if ip == nil {
		return b, false // encode100 would fail on it
	}
	o := jsonscan.NewObject(b)
	o.IntPtr("interface", ip.Interface)
	o.String("address", IPNet(ip.Address).String())
	optIP(o, "gateway", ip.Gateway)
	return o.Close()
}

func appendRoute(b []byte, rt *Route) ([]byte, bool) {
	if rt == nil {
		return append(b, "null"...), true
	}
	o := jsonscan.NewObject(b)
	o.String("dst", IPNet(rt.Dst).String())
	optIP(o, "gw", rt.GW)
	o.OptInt("mtu", rt.MTU)
	o.OptInt("advmss", rt.AdvMSS)
	o.OptInt("priority", rt.Priority)
	o.IntPtr("table", rt.Table)
	o.IntPtr("scope", rt.Scope)
	return o.Close()
}

func appendDNS(b []byte, d *DNS) []byte {
	o := jsonscan.NewObject(b)
	o.OptStrings("nameservers", d.Nameservers)
	o.OptString("domain", d.Domain)
	o.OptStrings("search", d.Search)
	o.OptStrings("options", d.Options)
	b, _ = o.Close() // strings only: it cannot fail
	return b
}

// optIP writes an address as net.IP's MarshalText does, unless it is
// empty; an address of a length MarshalText refuses sends the caller to
// the general path and its error.
func optIP(o *jsonscan.Object, key string, ip net.IP) {
	switch {
	case len(ip) == 0:
	case len(ip) != net.IPv4len && len(ip) != net.IPv6len:
		o.Fail()
	default:
		o.String(key, ip.String())
	}
}
