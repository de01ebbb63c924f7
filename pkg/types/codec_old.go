package types

import (
	"fmt"
	"net"
)

// ---- 0.3.0, 0.3.1 and 0.4.0 ----

type iface040 struct {
	Name    string `json:"name"`
	Mac     string `json:"mac,omitempty"`
	Sandbox string `json:"sandbox,omitempty"`
}

type ip040 struct {
	Version   string `json:"version"`
	Interface *int   `json:"interface,omitempty"`
	Address   IPNet  `json:"address"`
	Gateway   net.IP `json:"gateway,omitempty"`
}

type route040 struct {
	Dst IPNet  `json:"dst"`
	GW  net.IP `json:"gw,omitempty"`
}

type result040 struct {
	CNIVersion string      `json:"cniVersion"`
	Interfaces []*iface040 `json:"interfaces,omitempty"`
	IPs        []*ip040    `json:"ips,omitempty"`
	Routes     []*route040 `json:"routes,omitempty"`
	DNS        DNS         `json:"dns"`
}

func encode040(r *Result, v string) *result040 {
	w := &result040{CNIVersion: v, Routes: routesOld(r.Routes), DNS: r.DNS}
	for _, i := range r.Interfaces {
		w.Interfaces = append(w.Interfaces, &iface040{i.Name, i.Mac, i.Sandbox})
	}
	for _, ip := range r.IPs {
		fam := fmt.Sprint(family(ip.Address.IP))
		w.IPs = append(w.IPs, &ip040{fam, ip.Interface, IPNet(ip.Address), ip.Gateway})
	}
	return w
}

func decode040(data []byte, root string) (*Result, error) {
	var w result040
	if err := decodeJSON(data, &w, root); err != nil {
		return nil, err
	}
	r := &Result{Routes: routesNew(w.Routes), DNS: w.DNS}
	for _, i := range w.Interfaces {
		r.Interfaces = append(r.Interfaces, &Interface{Name: i.Name, Mac: i.Mac, Sandbox: i.Sandbox})
	}
	for i, ip := range w.IPs {
		if ip.Version != "" && ip.Version != fmt.Sprint(family(ip.Address.IP)) {
			return nil, fmt.Errorf("%s: address %s does not match version %q",
				joinPath(root, fmt.Sprintf("ips[%d]", i)), IPNet(ip.Address), ip.Version)
		}
		r.IPs = append(r.IPs, &IPConfig{ip.Interface, net.IPNet(ip.Address), normIP(ip.Gateway)})
	}
	return r, nil
}

// ---- 0.1.0 and 0.2.0 ----

type ipConfig020 struct {
	IP      IPNet       `json:"ip"`
	Gateway net.IP      `json:"gateway,omitempty"`
	Routes  []*route040 `json:"routes,omitempty"`
}

type result020 struct {
	CNIVersion string       `json:"cniVersion"`
	IP4        *ipConfig020 `json:"ip4,omitempty"`
	IP6        *ipConfig020 `json:"ip6,omitempty"`
	DNS        DNS          `json:"dns"`
}

// encode020 keeps the first address of each family; Expressible has already
// refused results that would lose one.
func encode020(r *Result, v string) *result020 {
	w := &result020{CNIVersion: v, DNS: r.DNS}
	for _, ip := range r.IPs {
		c := &ipConfig020{IP: IPNet(ip.Address), Gateway: ip.Gateway}
		if family(ip.Address.IP) == 4 && w.IP4 == nil {
			w.IP4 = c
		} else if family(ip.Address.IP) == 6 && w.IP6 == nil {
			w.IP6 = c
		}
	}
	for _, rt := range routesOld(r.Routes) {
		if c := w.IP4; family(rt.Dst.IP) == 4 && c != nil {
			c.Routes = append(c.Routes, rt)
		} else if c := w.IP6; family(rt.Dst.IP) == 6 && c != nil {
			c.Routes = append(c.Routes, rt)
		}
	}
	return w
}

func decode020(data []byte, root string) (*Result, error) {
	var w result020
	if err := decodeJSON(data, &w, root); err != nil {
		return nil, err
	}
	r := &Result{DNS: w.DNS}
	for _, c := range []*ipConfig020{w.IP4, w.IP6} {
		if c == nil {
			continue
		}
		r.IPs = append(r.IPs, &IPConfig{Address: net.IPNet(c.IP), Gateway: normIP(c.Gateway)})
		r.Routes = append(r.Routes, routesNew(c.Routes)...)
	}
	return r, nil
}

func routesOld(in []*Route) []*route040 {
	var out []*route040
	for _, r := range in {
		out = append(out, &route040{IPNet(r.Dst), r.GW})
	}
	return out
}

func routesNew(in []*route040) []*Route {
	var out []*Route
	for _, r := range in {
		out = append(out, &Route{Dst: net.IPNet(r.Dst), GW: normIP(r.GW)})
	}
	return out
}
