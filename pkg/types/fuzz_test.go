package types

import (
	"strings"
	"testing"

	"cnisuite/pkg/version"
)

// FuzzParseArgs: never panics; what it accepts re-parses to the same pairs.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"", "IP=10.0.0.1", "IgnoreUnknown=1;X=y", "a=b=c;", ";;", "MAC="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args, err := ParseArgs(s)
		if err != nil {
			if Code(err) != CodeInvalidEnv && Code(err) != CodeUnsupportedField {
				t.Fatalf("ParseArgs(%q) error %v has code %d", s, err, Code(err))
			}
			return
		}
		var pairs []string
		for k, v := range args {
			pairs = append(pairs, k+"="+v)
		}
		again, err := ParseArgs(strings.Join(pairs, ";"))
		if err != nil || len(again) != len(args) {
			t.Fatalf("re-parse of %q: %v, %v", pairs, again, err)
		}
	})
}

// FuzzDecodeResult: never panics; a decoded result encodes at every version
// it is expressible in and decodes back.
func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(`{"cniVersion":"1.1.0","ips":[{"address":"10.0.0.2/24","gateway":"10.0.0.1"}]}`), "1.1.0")
	f.Add([]byte(`{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.0.0.2/24"}],"dns":{}}`), "")
	f.Add([]byte(`{"ip4":{"ip":"10.0.0.2/24","routes":[{"dst":"0.0.0.0/0"}]}}`), "0.2.0")
	// Shapes other programs really print: null list elements, wrong types,
	// out-of-range interface indexes.
	for _, s := range oddResults {
		f.Add([]byte(s), "1.0.0")
	}
	f.Fuzz(func(t *testing.T, data []byte, fallback string) {
		r, err := DecodeResult(data, fallback)
		if err != nil {
			return
		}
		for _, v := range version.All {
			out, err := r.Encode(v)
			if err != nil {
				if r.Expressible(v) == nil {
					t.Fatalf("Encode(%s) failed on an expressible result: %v", v, err)
				}
				continue
			}
			if _, err := DecodeResult(out, ""); err != nil {
				t.Fatalf("our own %s output does not decode: %v\n%s", v, err, out)
			}
		}
	})
}

// FuzzNetConf: decoding any configuration never panics, nor does reading its
// prevResult and GC attachments.
func FuzzNetConf(f *testing.F) {
	f.Add([]byte(`{"cniVersion":"1.0.0","name":"n","type":"bridge","prevResult":{"ips":[]}}`))
	f.Add([]byte(`{"cniVersion":"1.1.0","name":"n","cni.dev/attachments":[{"containerID":"a","ifname":"b"}]}`))
	f.Add([]byte(`{"cniVersion":"1.1.0","name":"n","cni.dev/valid-attachments":[null,{"containerID":"a"}]}`))
	for _, s := range oddResults {
		f.Add([]byte(`{"cniVersion":"1.0.0","name":"n","prevResult":` + s + `}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c NetConf
		if err := Decode(data, &c); err != nil {
			if Code(err) != CodeDecoding {
				t.Fatalf("Decode error %v has code %d, want 6", err, Code(err))
			}
			return
		}
		r, err := c.PrevResult()
		if err != nil {
			if code := Code(err); code != CodeDecoding && code != CodeIncompatibleVersion {
				t.Fatalf("PrevResult error %v has code %d, want 6 or 1", err, code)
			}
			return
		}
		_ = c.GCAttachments()
		if r != nil {
			_, _ = r.Copy().Encode(r.CNIVersion) // must not panic
		}
	})
}

// oddResults are results shaped as buggy plugins and delegates print them.
var oddResults = []string{
	`{"cniVersion":"1.0.0","interfaces":[null]}`,
	`{"cniVersion":"1.1.0","ips":[{"address":"10.0.0.2/24"},null],"routes":[null]}`,
	`{"cniVersion":"0.4.0","interfaces":[null],"ips":[null],"routes":[null],"dns":null}`,
	`{"cniVersion":"0.2.0","ip4":null,"ip6":{"ip":"::2/64","routes":[null]}}`,
	`{"cniVersion":"1.0.0","interfaces":[{"name":"e"}],"ips":[{"address":"10.0.0.2/24","interface":7}]}`,
	`{"cniVersion":"1.0.0","interfaces":[1,"x",[]],"ips":{"address":"10.0.0.2/24"}}`,
	`{"cniVersion":"1.0.0","dns":{"nameservers":[null,1]},"routes":[{"dst":null,"gw":[]}]}`,
	`null`, `[]`, `5`, `"x"`,
}
