package types

import (
	"encoding/json"
	"fmt"
	"net"

	"cnisuite/pkg/version"
)

// DecodeResult reads a result written at any supported version. A result
// without cniVersion is read at fallbackVersion.
func DecodeResult(data []byte, fallbackVersion string) (*Result, error) {
	return decodeResult(data, fallbackVersion, "")
}

// decodeResult reads a result found at the JSON path root ("" for a whole
// document, "prevResult" inside a configuration), through encoding/json for
// every version and shape; errors name paths below root.
func decodeResult(data []byte, fallbackVersion, root string) (*Result, error) {
	what := root
	if what == "" {
		what = "result"
	}
	var head struct {
		CNIVersion string `json:"cniVersion"`
	}
	if err := decodeJSON(data, &head, root); err != nil {
		return nil, Errorf(ErrDecoding, "decoding %s: %w", what, err)
	}
	v := head.CNIVersion
	if v == "" {
		v = fallbackVersion
	}
	fam, err := version.FamilyOf(v)
	if err != nil {
		return nil, Errorf(ErrIncompatibleVersion, "%s: %w", what, err)
	}
	var r *Result
	switch fam {
	case version.Family100:
		r, err = decode100(data, root)
	case version.Family040:
		r, err = decode040(data, root)
	default:
		r, err = decode020(data, root)
	}
	if err == nil {
		err = r.validate(root)
	}
	if err != nil {
		return nil, Errorf(ErrDecoding, "decoding %s at cniVersion %s: %w", what, v, err)
	}
	r.CNIVersion = v
	return r, nil
}

// validate refuses results with holes no version can print, and values the
// result schema does not allow, which a chained plugin would otherwise pass
// on in its own result.
func (r *Result) validate(root string) error {
	for i, in := range r.Interfaces {
		at := joinPath(root, fmt.Sprintf("interfaces[%d]", i))
		if in.Mac != "" && !isSchemaMAC(in.Mac) {
			return fmt.Errorf("%s.mac %q: not a MAC address of the form 0a:58:0a:f4:00:01", at, in.Mac)
		}
		if in.Mtu != 0 && (in.Mtu < 68 || in.Mtu > 65535) {
			return fmt.Errorf("%s.mtu %d: must be 68-65535", at, in.Mtu)
		}
	}
	for i, ip := range r.IPs {
		at := joinPath(root, fmt.Sprintf("ips[%d]", i))
		if ip.Address.IP == nil || ip.Address.Mask == nil {
			return fmt.Errorf("%s: address missing", at)
		}
		if ip.Interface != nil && (*ip.Interface < 0 || *ip.Interface >= len(r.Interfaces)) {
			return fmt.Errorf("%s.interface: index %d is out of range: the result has %d interfaces",
				at, *ip.Interface, len(r.Interfaces))
		}
	}
	for i, rt := range r.Routes {
		if err := rt.validate(joinPath(root, fmt.Sprintf("routes[%d]", i))); err != nil {
			return err
		}
	}
	return nil
}

// isSchemaMAC reports whether s has the result schema's form of a MAC
// address: six pairs of hex digits separated by colons.
func isSchemaMAC(s string) bool {
	if len(s) != 17 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i%3 == 2 {
			if s[i] != ':' {
				return false
			}
		} else if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validate checks a route against the result schema; 0 stands for an
// absent mtu, advmss or priority.
func (rt *Route) validate(at string) error {
	switch {
	case rt.Dst.IP == nil || rt.Dst.Mask == nil:
		return fmt.Errorf("%s: dst missing", at)
	case rt.MTU != 0 && (rt.MTU < 68 || rt.MTU > 65535):
		return fmt.Errorf("%s.mtu %d: must be 68-65535", at, rt.MTU)
	case rt.AdvMSS < 0:
		return fmt.Errorf("%s.advmss %d: must be positive", at, rt.AdvMSS)
	case rt.Priority < 0:
		return fmt.Errorf("%s.priority %d: must not be negative", at, rt.Priority)
	}
	return nil
}

// Encode writes r at the given version, indented as plugins print it.
func (r *Result) Encode(v string) ([]byte, error) {
	if err := r.Expressible(v); err != nil {
		return nil, err
	}
	fam, _ := version.FamilyOf(v)
	var w any
	switch fam {
	case version.Family100:
		w = encode100(r, v)
	case version.Family040:
		w = encode040(r, v)
	default:
		w = encode020(r, v)
	}
	return json.MarshalIndent(w, "", "    ")
}

// Expressible reports whether r can be written at version v without losing
// addresses. Plugins call it on the result they are about to build before
// they change anything.
func (r *Result) Expressible(v string) error {
	fam, err := version.FamilyOf(v)
	if err != nil {
		return Errorf(ErrIncompatibleVersion, "%w", err)
	}
	if fam != version.Family020 {
		return nil
	}
	return Expressible020(r.IPs)
}

// Expressible020 reports whether a set of addresses fits a 0.1.0/0.2.0
// result: at least one address and at most one per family.
func Expressible020(ips []*IPConfig) error {
	if len(ips) == 0 {
		return Errorf(ErrIncompatibleVersion,
			"a result at cniVersion 0.1.0/0.2.0 needs an IP address and this one has none; use cniVersion 0.3.0 or newer")
	}
	count := map[int]int{}
	for _, ip := range ips {
		count[family(ip.Address.IP)]++
	}
	for fam, n := range count {
		if n > 1 {
			return Errorf(ErrIncompatibleVersion,
				"a result at cniVersion 0.1.0/0.2.0 holds one IPv%d address and this one has %d; use cniVersion 0.3.0 or newer", fam, n)
		}
	}
	return nil
}

// ---- 1.0.0 and 1.1.0 ----

type iface100 struct {
	Name       string `json:"name"`
	Mac        string `json:"mac,omitempty"`
	Mtu        int    `json:"mtu,omitempty"`
	Sandbox    string `json:"sandbox,omitempty"`
	SocketPath string `json:"socketPath,omitempty"`
	PciID      string `json:"pciID,omitempty"`
}

type ip100 struct {
	Interface *int   `json:"interface,omitempty"`
	Address   IPNet  `json:"address"`
	Gateway   net.IP `json:"gateway,omitempty"`
}

type result100 struct {
	CNIVersion string      `json:"cniVersion"`
	Interfaces []*iface100 `json:"interfaces,omitempty"`
	IPs        []*ip100    `json:"ips,omitempty"`
	Routes     []*Route    `json:"routes,omitempty"`
	DNS        *DNS        `json:"dns,omitempty"`
}

func encode100(r *Result, v string) *result100 {
	w := &result100{CNIVersion: v, Routes: r.Routes}
	for _, i := range r.Interfaces {
		c := iface100(*i)
		w.Interfaces = append(w.Interfaces, &c)
	}
	for _, ip := range r.IPs {
		w.IPs = append(w.IPs, &ip100{ip.Interface, IPNet(ip.Address), ip.Gateway})
	}
	if !r.DNS.IsEmpty() {
		d := r.DNS
		w.DNS = &d
	}
	return w
}

func decode100(data []byte, root string) (*Result, error) {
	var w result100
	if err := decodeJSON(data, &w, root); err != nil {
		return nil, err
	}
	r := &Result{Routes: w.Routes}
	for _, i := range w.Interfaces {
		c := Interface(*i)
		r.Interfaces = append(r.Interfaces, &c)
	}
	for _, ip := range w.IPs {
		r.IPs = append(r.IPs, &IPConfig{ip.Interface, net.IPNet(ip.Address), normIP(ip.Gateway)})
	}
	if w.DNS != nil {
		r.DNS = *w.DNS
	}
	return r, nil
}
