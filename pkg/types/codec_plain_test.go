package types

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"cnisuite/pkg/jsonscan/scantest"
)

// runtimeResults are results as our plugins and runtimes exchange them.
var runtimeResults = []string{
	`{"cniVersion":"1.0.0","interfaces":[{"name":"cni0","mac":"2e:7a:52:1b:0c:11"},{"name":"veth3f2a9c1e","mac":"8a:11:0f:3e:22:41"},{"name":"eth0","mac":"0a:58:0a:58:00:05","sandbox":"/var/run/netns/cni-5b0e"}],"ips":[{"interface":2,"address":"10.88.0.5/16","gateway":"10.88.0.1"}],"routes":[{"dst":"0.0.0.0/0","gw":"10.88.0.1"}],"dns":{}}`,
	`{
    "cniVersion": "1.1.0",
    "interfaces": [
        {
            "name": "eth0",
            "mac": "0a:58:0a:58:00:05",
            "mtu": 1450,
            "sandbox": "/run/netns/p1",
            "socketPath": "/run/vhost.sock",
            "pciID": "0000:00:1f.6"
        }
    ],
    "ips": [
        {"interface": 0, "address": "10.88.0.5/16", "gateway": "10.88.0.1"},
        {"interface": 0, "address": "fd00::5/64"}
    ],
    "routes": [
        {"dst": "0.0.0.0/0", "gw": "10.88.0.1", "mtu": 1400, "advmss": 1360, "priority": 10, "table": 100, "scope": 0},
        {"dst": "::/0"}
    ],
    "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local", "search": ["svc.cluster.local"], "options": ["ndots:5"]}
}`,
	`{"ips":[{"address":"10.1.2.3/24","gateway":"10.1.2.1"}],"routes":[],"extra":{"a":[1,2,{"b":null}],"c":"\"x\""}}`,
}

// TestPlainPathTakesRuntimeResults: the results runtimes exchange take the
// plain path both ways, and it answers as the general one does.
func TestPlainPathTakesRuntimeResults(t *testing.T) {
	for _, s := range runtimeResults {
		plain, ok := decodePlain([]byte(s), "1.0.0")
		if !ok {
			t.Fatalf("decodePlain refused %s", s)
		}
		general, err := decodeGeneral([]byte(s), "1.0.0", "")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(plain, general) {
			t.Fatalf("plain %+v\ngeneral %+v", plain, general)
		}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			out, ok := encodePlain(general, v)
			if !ok {
				t.Fatalf("encodePlain refused %+v", general)
			}
			if want := encodeGeneral(t, general, v); !bytes.Equal(out, want) {
				t.Fatalf("plain encoding\n%s\ngeneral\n%s", out, want)
			}
		}
	}
}

// TestPlainPathStepsAside: shapes whose meaning encoding/json decides (an
// escape, a repeated key, a key in another case, a null, a fraction, an
// older version) are left to the general path, and decodeResult still
// gives its answer.
func TestPlainPathStepsAside(t *testing.T) {
	for _, s := range []string{
		`{"cniVersion":"1.0.0","interfaces":[{"name":"eth\u0030"}]}`,
		`{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}],"ips":[{"address":"10.0.0.3/24"}]}`,
		`{"cniVersion":"1.0.0","IPs":[{"address":"10.0.0.2/24"}]}`,
		`{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24","Gateway":"10.0.0.1"}]}`,
		`{"cniVersion":"1.0.0","dns":null}`,
		`{"cniVersion":"1.0.0","routes":[{"dst":"0.0.0.0/0","mtu":1400.0}]}`,
		`{"cniVersion":"1.0.0","interfaces":[{"name":"e","ſocketPath":"/x"}]}`,
		`{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.0.0.2/24"}]}`,
		`{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24","gateway":"nonsense"}]}`,
		`{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}]`,
	} {
		if _, ok := decodePlain([]byte(s), "1.0.0"); ok {
			t.Errorf("decodePlain took %s", s)
		}
		got, gotErr := DecodeResult([]byte(s), "1.0.0")
		want, wantErr := decodeGeneral([]byte(s), "1.0.0", "")
		if !reflect.DeepEqual(got, want) || errText(gotErr) != errText(wantErr) {
			t.Errorf("%s: DecodeResult %+v, %v; general path %+v, %v", s, got, gotErr, want, wantErr)
		}
	}
}

// FuzzPlainResult: wherever the plain path answers, it answers as the
// general one: the same result decoded, the same bytes encoded.
func FuzzPlainResult(f *testing.F) {
	for _, s := range append(append([]string{}, runtimeResults...), oddResults...) {
		f.Add([]byte(s), "1.0.0")
	}
	f.Add([]byte(`{"interfaces":[{"name":"<&>\u2028","mac":"x"}],"dns":{"search":["a","<b>"]}}`), "1.1.0")
	f.Add([]byte(`{"cniVersion":"1.1.0","routes":[{"dst":"10.0.0.0/8","table":-1,"scope":253}]}`), "")
	f.Fuzz(func(t *testing.T, data []byte, fallback string) {
		general, err := decodeGeneral(data, fallback, "")
		plain, ok := decodePlain(data, fallback)
		if ok && plain.validate("") == nil && (err != nil || !reflect.DeepEqual(plain, general)) {
			t.Fatalf("plain %+v\ngeneral %+v, %v", plain, general, err)
		}
		if err != nil {
			return
		}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			if out, ok := encodePlain(general, v); ok {
				if want := encodeGeneral(t, general, v); !bytes.Equal(out, want) {
					t.Fatalf("plain encoding\n%s\ngeneral\n%s", out, want)
				}
			}
		}
	})
}

func encodeGeneral(t *testing.T, r *Result, v string) []byte {
	t.Helper()
	out, err := json.MarshalIndent(encode100(r, v), "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPlainResultKeys: the plain reader of a 1.0.0/1.1.0 result reads
// exactly the keys of the types encoding/json reads it into (result100 and
// the types under it): a key added there without its plain reading would
// be skipped, not left to encoding/json.
func TestPlainResultKeys(t *testing.T) {
	scantest.SameFields(t, reflect.TypeOf(result100{}), (&Result{}).plainFields())
	scantest.SameFields(t, reflect.TypeOf(iface100{}), (&Interface{}).plainFields())
	scantest.SameFields(t, reflect.TypeOf(ip100{}), (&IPConfig{}).plainFields())
	scantest.SameFields(t, reflect.TypeOf(routeWire{}), (&Route{}).plainFields())
	scantest.SameFields(t, reflect.TypeOf(DNS{}), (&DNS{}).plainFields())
}
