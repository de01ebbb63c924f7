package types

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"

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
			ip.Interface = Int(rd.Int())
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
			rt.Table = Int(rd.Int())
		case 6:
			rt.Scope = Int(rd.Int())
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
	b := append([]byte(`{"cniVersion":`), jsonscan.AppendString(nil, v)...)
	ok := true
	if len(r.Interfaces) > 0 {
		b = append(b, `,"interfaces":[`...)
		for i, in := range r.Interfaces {
			if in == nil {
				return nil, false
			}
			b = appendIface(comma(b, i), in)
		}
		b = append(b, ']')
	}
	if len(r.IPs) > 0 {
		b = append(b, `,"ips":[`...)
		for i, ip := range r.IPs {
			if ip == nil {
				return nil, false
			}
			b = appendIP(comma(b, i), ip, &ok)
		}
		b = append(b, ']')
	}
	if len(r.Routes) > 0 {
		b = append(b, `,"routes":[`...)
		for i, rt := range r.Routes {
			b = appendRoute(comma(b, i), rt, &ok)
		}
		b = append(b, ']')
	}
	if !r.DNS.IsEmpty() {
		b = appendDNS(append(b, `,"dns":`...), &r.DNS)
	}
	b = append(b, '}')
	var out bytes.Buffer
	if !ok || json.Indent(&out, b, "", "    ") != nil {
		return nil, false
	}
	return out.Bytes(), true
}

func comma(b []byte, i int) []byte {
	if i > 0 {
		return append(b, ',')
	}
	return b
}

// member appends ,"key":value to an object already begun.
func member(b []byte, key string) []byte {
	return append(append(append(b, ",\""...), key...), "\":"...)
}

func appendIface(b []byte, in *Interface) []byte {
	b = append(b, `{"name":`...)
	b = jsonscan.AppendString(b, in.Name)
	b = optString(b, "mac", in.Mac)
	b = optInt(b, "mtu", in.Mtu)
	b = optString(b, "sandbox", in.Sandbox)
	b = optString(b, "socketPath", in.SocketPath)
	b = optString(b, "pciID", in.PciID)
	return append(b, '}')
}

func appendIP(b []byte, ip *IPConfig, ok *bool) []byte {
	b = append(b, '{')
	if ip.Interface != nil {
		b = strconv.AppendInt(append(b, `"interface":`...), int64(*ip.Interface), 10)
		b = append(b, ',')
	}
	b = jsonscan.AppendString(append(b, `"address":`...), IPNet(ip.Address).String())
	b = optIP(b, "gateway", ip.Gateway, ok)
	return append(b, '}')
}

func appendRoute(b []byte, rt *Route, ok *bool) []byte {
	if rt == nil {
		return append(b, "null"...)
	}
	b = jsonscan.AppendString(append(b, `{"dst":`...), IPNet(rt.Dst).String())
	b = optIP(b, "gw", rt.GW, ok)
	b = optInt(b, "mtu", rt.MTU)
	b = optInt(b, "advmss", rt.AdvMSS)
	b = optInt(b, "priority", rt.Priority)
	if rt.Table != nil {
		b = strconv.AppendInt(member(b, "table"), int64(*rt.Table), 10)
	}
	if rt.Scope != nil {
		b = strconv.AppendInt(member(b, "scope"), int64(*rt.Scope), 10)
	}
	return append(b, '}')
}

func appendDNS(b []byte, d *DNS) []byte {
	var in []byte // the members, each after a comma
	in = optStrings(in, "nameservers", d.Nameservers)
	in = optString(in, "domain", d.Domain)
	in = optStrings(in, "search", d.Search)
	in = optStrings(in, "options", d.Options)
	return append(append(append(b, '{'), in[1:]...), '}')
}

func optString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonscan.AppendString(member(b, key), s)
}

func optInt(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(member(b, key), int64(n), 10)
}

func optStrings(b []byte, key string, list []string) []byte {
	if len(list) == 0 {
		return b
	}
	b = append(member(b, key), '[')
	for i, s := range list {
		b = jsonscan.AppendString(comma(b, i), s)
	}
	return append(b, ']')
}

// optIP writes an address as net.IP's MarshalText does; an address of a
// length it refuses sends the caller to the general path and its error.
func optIP(b []byte, key string, ip net.IP, ok *bool) []byte {
	if len(ip) == 0 {
		return b
	}
	if len(ip) != net.IPv4len && len(ip) != net.IPv6len {
		*ok = false
		return b
	}
	return jsonscan.AppendString(member(b, key), ip.String())
}
