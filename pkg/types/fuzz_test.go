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
	f.Fuzz(func(t *testing.T, data []byte) {
		var c NetConf
		if Decode(data, &c) != nil {
			return
		}
		_, _ = c.PrevResult() // any error is fine; only a panic is not
		_ = c.GCAttachments()
	})
}
