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

var (
	resultKeys = []string{"cniVersion", "interfaces", "ips", "routes", "dns"}
	ifaceKeys  = []string{"name", "mac", "mtu", "sandbox", "socketPath", "pciID"}
	ipKeys     = []string{"interface", "address", "gateway"}
	routeKeys  = []string{"dst", "gw", "mtu", "advmss", "priority", "table", "scope"}
	dnsKeys    = []string{"nameservers", "domain", "search", "options"}
)

// decodePlain reads a 1.0.0/1.1.0 result, before validation; the version is
// the document's or fallback.
func decodePlain(data []byte, fallback string) (*Result, bool) {
	rd := jsonscan.NewReader(data)
	r := &Result{CNIVersion: fallback}
	rd.Object(resultKeys, func(i int) {
		switch i {
		case 0:
			if v := rd.String(); v != "" {
				r.CNIVersion = v
			}
		case 1:
			rd.Array(func() { r.Interfaces = append(r.Interfaces, plainIface(rd)) })
		case 2:
			rd.Array(func() { r.IPs = append(r.IPs, plainIP(rd)) })
		case 3:
			r.Routes = []*Route{} // [] is an empty list, as encoding/json reads it
			rd.Array(func() { r.Routes = append(r.Routes, plainRoute(rd)) })
		case 4:
			r.DNS = plainDNS(rd)
		}
	})
	if fam, err := version.FamilyOf(r.CNIVersion); err != nil || fam != version.Family100 {
		return nil, false
	}
	return r, rd.OK()
}

func plainIface(rd *jsonscan.Reader) *Interface {
	in := &Interface{}
	rd.Object(ifaceKeys, func(i int) {
		switch i {
		case 0:
			in.Name = rd.String()
		case 1:
			in.Mac = rd.String()
		case 2:
			in.Mtu = rd.Int()
		case 3:
			in.Sandbox = rd.String()
		case 4:
			in.SocketPath = rd.String()
		case 5:
			in.PciID = rd.String()
		}
	})
	return in
}

func plainIP(rd *jsonscan.Reader) *IPConfig {
	ip := &IPConfig{}
	rd.Object(ipKeys, func(i int) {
		switch i {
		case 0:
			ip.Interface = Ptr(rd.Int())
		case 1:
			ip.Address = plainCIDR(rd)
		case 2:
			ip.Gateway = plainIP4or6(rd)
		}
	})
	return ip
}

func plainRoute(rd *jsonscan.Reader) *Route {
	rt := &Route{}
	rd.Object(routeKeys, func(i int) {
		switch i {
		case 0:
			rt.Dst = plainCIDR(rd)
		case 1:
			rt.GW = plainIP4or6(rd)
		case 2:
			rt.MTU = rd.Int()
		case 3:
			rt.AdvMSS = rd.Int()
		case 4:
			rt.Priority = rd.Int()
		case 5:
			rt.Table = Ptr(rd.Int())
		case 6:
			rt.Scope = Ptr(rd.Int())
		}
	})
	return rt
}

func plainDNS(rd *jsonscan.Reader) DNS {
	var d DNS
	rd.Object(dnsKeys, func(i int) {
		switch i {
		case 0:
			d.Nameservers = rd.Strings()
		case 1:
			d.Domain = rd.String()
		case 2:
			d.Search = rd.Strings()
		case 3:
			d.Options = rd.Strings()
		}
	})
	return d
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
