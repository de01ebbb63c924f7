package types

import (
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"

	"cnisuite/pkg/version"
)

func mustCIDR(t testing.TB, s string) net.IPNet {
	t.Helper()
	n, err := ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return *n
}

// fullResult uses every field of the 1.1.0 model.
func fullResult(t testing.TB) *Result {
	return &Result{
		CNIVersion: "1.1.0",
		Interfaces: []*Interface{
			{Name: "cni0", Mac: "00:11:22:33:44:55", Mtu: 1500},
			{Name: "eth0", Mac: "00:11:22:33:44:66", Sandbox: "/var/run/netns/x", SocketPath: "/s", PciID: "0000:00:01.0"},
		},
		IPs: []*IPConfig{
			{Interface: Ptr(1), Address: mustCIDR(t, "10.1.2.3/24"), Gateway: net.ParseIP("10.1.2.1").To4()},
			{Interface: Ptr(1), Address: mustCIDR(t, "fd00::3/64"), Gateway: net.ParseIP("fd00::1")},
		},
		Routes: []*Route{
			{Dst: mustCIDR(t, "0.0.0.0/0"), GW: net.ParseIP("10.1.2.1").To4(), MTU: 1400, AdvMSS: 1360, Priority: 5, Table: Ptr(100), Scope: Ptr(0)},
			{Dst: mustCIDR(t, "::/0")},
		},
		DNS: DNS{Nameservers: []string{"10.1.2.1"}, Domain: "example", Search: []string{"a.example"}, Options: []string{"ndots:2"}},
	}
}

// expressedAt is what survives of r when written at version v.
func expressedAt(r *Result, v string) *Result {
	fam, _ := version.FamilyOf(v)
	out := r.Copy()
	out.CNIVersion = v
	switch fam {
	case version.Family100:
		return out
	case version.Family040:
		for _, i := range out.Interfaces {
			i.Mtu, i.SocketPath, i.PciID = 0, "", ""
		}
	default:
		out.Interfaces = nil
		for _, ip := range out.IPs {
			ip.Interface = nil
		}
	}
	for _, rt := range out.Routes {
		*rt = Route{Dst: rt.Dst, GW: rt.GW}
	}
	return out
}

func TestRoundTripEveryVersionPair(t *testing.T) {
	for _, from := range version.All {
		for _, to := range version.All {
			t.Run(from+"_to_"+to, func(t *testing.T) {
				orig := expressedAt(fullResult(t), from)
				data, err := orig.Encode(from)
				if err != nil {
					t.Fatalf("Encode(%s): %v", from, err)
				}
				got, err := DecodeResult(data, "")
				if err != nil {
					t.Fatalf("DecodeResult: %v\n%s", err, data)
				}
				if !reflect.DeepEqual(got, orig) {
					t.Fatalf("decode(encode(r)) at %s:\n got %+v\nwant %+v", from, dump(got), dump(orig))
				}
				data2, err := got.Encode(to)
				if err != nil {
					t.Fatalf("Encode(%s): %v", to, err)
				}
				back, err := DecodeResult(data2, "")
				if err != nil {
					t.Fatal(err)
				}
				if want := expressedAt(orig, to); !reflect.DeepEqual(back, want) {
					t.Fatalf("%s→%s:\n got %s\nwant %s", from, to, dump(back), dump(want))
				}
			})
		}
	}
}

func dump(r *Result) string {
	data, _ := r.Encode("1.1.0")
	return string(data)
}

func TestEncodeShapes(t *testing.T) {
	r := fullResult(t)
	tests := []struct {
		version string
		has     []string
		hasNot  []string
	}{
		{"1.1.0", []string{`"mtu": 1500`, `"socketPath"`, `"table": 100`, `"dns"`}, []string{`"version"`}},
		{"0.4.0", []string{`"version": "4"`, `"version": "6"`, `"dns"`}, []string{`"mtu"`, `"socketPath"`, `"table"`}},
		{"0.2.0", []string{`"ip4"`, `"ip6"`, `"ip": "10.1.2.3/24"`}, []string{`"ips"`, `"interfaces"`}},
	}
	for _, tt := range tests {
		data, err := r.Encode(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tt.has {
			if !strings.Contains(string(data), s) {
				t.Errorf("Encode(%s) lacks %s:\n%s", tt.version, s, data)
			}
		}
		for _, s := range tt.hasNot {
			if strings.Contains(string(data), s) {
				t.Errorf("Encode(%s) has %s:\n%s", tt.version, s, data)
			}
		}
	}
	empty := &Result{IPs: r.IPs[:1]}
	data, _ := empty.Encode("1.0.0")
	if strings.Contains(string(data), "dns") {
		t.Errorf("1.0.0 result with empty DNS prints it:\n%s", data)
	}
	data, _ = empty.Encode("0.3.1")
	if !strings.Contains(string(data), `"dns": {}`) {
		t.Errorf("0.3.1 result must always print dns:\n%s", data)
	}
}

func TestExpressible(t *testing.T) {
	r := fullResult(t)
	l2 := &Result{Interfaces: r.Interfaces}
	two := &Result{IPs: []*IPConfig{r.IPs[0], {Address: mustCIDR(t, "10.9.9.9/24")}}}
	for _, v := range []string{"0.1.0", "0.2.0"} {
		if err := l2.Expressible(v); !errors.Is(err, ErrIncompatibleVersion) {
			t.Errorf("L2 result at %s: %v, want ErrIncompatibleVersion", v, err)
		}
		if err := two.Expressible(v); err == nil || !strings.Contains(err.Error(), "IPv4") {
			t.Errorf("two IPv4 at %s: %v, want an error naming IPv4", v, err)
		}
		if _, err := l2.Encode(v); err == nil {
			t.Errorf("Encode(%s) of an L2 result succeeded", v)
		}
		if err := r.Expressible(v); err != nil {
			t.Errorf("one address per family at %s: %v", v, err)
		}
	}
	if err := l2.Expressible("0.3.0"); err != nil {
		t.Errorf("L2 at 0.3.0: %v", err)
	}
	if err := r.Expressible("9.9.9"); !errors.Is(err, ErrIncompatibleVersion) {
		t.Errorf("unknown version: %v", err)
	}
}

func TestDecodeResultErrors(t *testing.T) {
	tests := []struct{ name, data, fallback string }{
		{"not json", `{`, "1.0.0"},
		{"unknown version", `{"cniVersion":"7.0.0"}`, ""},
		{"bad address", `{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.300/24"}]}`, ""},
		{"version mismatch", `{"cniVersion":"0.4.0","ips":[{"version":"6","address":"10.0.0.3/24"}]}`, ""},
		{"no version no fallback", `{}`, ""},
	}
	for _, tt := range tests {
		if r, err := DecodeResult([]byte(tt.data), tt.fallback); err == nil {
			t.Errorf("%s: DecodeResult = %+v, want an error", tt.name, r)
		}
	}
}

func TestPrevResult(t *testing.T) {
	conf := NetConf{CNIVersion: "1.0.0", RawPrevResult: json.RawMessage(`{"ips":[{"address":"10.0.0.2/24"}]}`)}
	r, err := conf.PrevResult()
	if err != nil || r.CNIVersion != "1.0.0" || len(r.IPs) != 1 {
		t.Fatalf("PrevResult without its own version = %+v, %v", r, err)
	}
	conf.RawPrevResult = json.RawMessage(`{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24"}}`)
	if r, err = conf.PrevResult(); err != nil || r.IPs[0].Address.String() != "10.0.0.2/24" {
		t.Fatalf("0.2.0 prevResult under 1.0.0 = %+v, %v", r, err)
	}
	conf.RawPrevResult = nil
	if r, err = conf.PrevResult(); r != nil || err != nil {
		t.Fatalf("absent prevResult = %+v, %v", r, err)
	}
	conf.RawPrevResult = json.RawMessage(`[1]`)
	if _, err = conf.PrevResult(); !errors.Is(err, ErrDecoding) {
		t.Fatalf("bad prevResult = %v, want ErrDecoding", err)
	}
}

func TestGCAttachments(t *testing.T) {
	var conf NetConf
	data := `{"cni.dev/valid-attachments":[{"containerID":"a","ifname":"eth0"}],
		"cni.dev/attachments":[{"containerID":"a","ifname":"eth0"},{"containerID":"b","ifname":"eth1"}]}`
	if err := Decode([]byte(data), &conf); err != nil {
		t.Fatal(err)
	}
	got := conf.GCAttachments()
	want := []Attachment{{"a", "eth0"}, {"b", "eth1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GCAttachments = %v, want %v", got, want)
	}
}

func TestDefaultRoutes(t *testing.T) {
	_, v4, _ := net.ParseCIDR("10.1.0.5/24")
	_, v6, _ := net.ParseCIDR("fd00::5/64")
	r := &Result{IPs: []*IPConfig{
		{Address: *v4, Gateway: net.ParseIP("10.1.0.1")},
		{Address: *v6, Gateway: net.ParseIP("fd00::1")},
	}}
	metric := func(family int) int { return family * 100 }
	got := r.DefaultRoutes(metric)
	if len(got) != 2 || got[0].Dst.String() != "0.0.0.0/0" || got[0].Priority != 400 || got[1].Dst.String() != "::/0" || !got[1].GW.Equal(net.ParseIP("fd00::1")) || got[1].Priority != 600 {
		t.Errorf("DefaultRoutes = %v, want 0.0.0.0/0 via 10.1.0.1 metric 400 and ::/0 via fd00::1 metric 600", got)
	}
	r.Routes = []*Route{{Dst: net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}, GW: net.ParseIP("10.1.0.254")}}
	if got := r.DefaultRoutes(metric); len(got) != 1 || got[0].Dst.String() != "::/0" {
		t.Errorf("DefaultRoutes with an IPv4 default route = %v, want only ::/0", got)
	}
}
