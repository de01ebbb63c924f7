package types

import (
	"encoding/json"
	"net"
)

// Result is the one in-memory result model, shaped like spec 1.1.0. Codecs
// read and write it at every supported version.
type Result struct {
	CNIVersion string
	Interfaces []*Interface
	IPs        []*IPConfig
	Routes     []*Route
	DNS        DNS
}

// Interface is one interface a plugin created or configured.
type Interface struct {
	Name       string
	Mac        string
	Mtu        int
	Sandbox    string
	SocketPath string
	PciID      string
}

// IPConfig is one address assigned to an interface; Interface indexes
// Result.Interfaces and is nil in IPAM results.
type IPConfig struct {
	Interface *int
	Address   net.IPNet
	Gateway   net.IP
}

// Route is one route; the optional fields are those of spec 1.1.0.
type Route struct {
	Dst      net.IPNet
	GW       net.IP
	MTU      int
	AdvMSS   int
	Priority int
	Table    *int
	Scope    *int
}

// DNS holds resolver settings.
type DNS struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Domain      string   `json:"domain,omitempty"`
	Search      []string `json:"search,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// IsEmpty reports whether no DNS setting is present.
func (d DNS) IsEmpty() bool {
	return len(d.Nameservers) == 0 && d.Domain == "" && len(d.Search) == 0 && len(d.Options) == 0
}

type routeWire struct {
	Dst      IPNet  `json:"dst"`
	GW       net.IP `json:"gw,omitempty"`
	MTU      int    `json:"mtu,omitempty"`
	AdvMSS   int    `json:"advmss,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Table    *int   `json:"table,omitempty"`
	Scope    *int   `json:"scope,omitempty"`
}

// MarshalJSON writes the route in its spec 1.1.0 form.
func (r Route) MarshalJSON() ([]byte, error) {
	return json.Marshal(routeWire{IPNet(r.Dst), r.GW, r.MTU, r.AdvMSS, r.Priority, r.Table, r.Scope})
}

// UnmarshalJSON reads the route in its spec 1.1.0 form (older forms are a subset).
func (r *Route) UnmarshalJSON(data []byte) error {
	var w routeWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Route{net.IPNet(w.Dst), normIP(w.GW), w.MTU, w.AdvMSS, w.Priority, w.Table, w.Scope}
	return nil
}

// Copy returns a deep enough copy of r for a plugin to modify and print.
func (r *Result) Copy() *Result {
	out := &Result{CNIVersion: r.CNIVersion, DNS: r.DNS}
	for _, i := range r.Interfaces {
		c := *i
		out.Interfaces = append(out.Interfaces, &c)
	}
	for _, ip := range r.IPs {
		c := *ip
		out.IPs = append(out.IPs, &c)
	}
	for _, rt := range r.Routes {
		c := *rt
		out.Routes = append(out.Routes, &c)
	}
	return out
}

// DefaultRoutes returns a default route via the first gateway of each
// family of r's addresses that has no default route with a gateway yet,
// with the family's metric (family 4 or 6).
func (r *Result) DefaultRoutes(metric func(family int) int) []*Route {
	has := map[int]bool{}
	for _, rt := range r.Routes {
		if ones, _ := rt.Dst.Mask.Size(); ones == 0 && rt.GW != nil {
			has[family(rt.Dst.IP)] = true
		}
	}
	var out []*Route
	for _, ip := range r.IPs {
		fam := family(ip.Address.IP)
		if ip.Gateway == nil || has[fam] {
			continue
		}
		has[fam] = true
		dst := net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
		if fam == 6 {
			dst = net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
		}
		out = append(out, &Route{Dst: dst, GW: ip.Gateway, Priority: metric(fam)})
	}
	return out
}
