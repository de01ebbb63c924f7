package main

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"cnisuite/pkg/types"
	"cnisuite/plugins/meta/tuning/ethconf"
)

func i64(n int64) *int64 { return &n }

// TestLoadFeaturesAndChannels decodes "features" and "channels" as a user
// writes them, and args.cni over them.
func TestLoadFeaturesAndChannels(t *testing.T) {
	tests := []struct {
		name, conf   string
		wantFeatures ethconf.Features
		wantChannels *ethconf.Channels
	}{
		{"none", `{` + confHead + `}`, nil, nil},
		{"in the order written",
			`{` + confHead + `,"features":{"tx-checksumming":false,"rx-gro":true,"tx-tcp-segmentation":false}}`,
			ethconf.Features{{Name: "tx-checksumming", On: false}, {Name: "rx-gro", On: true}, {Name: "tx-tcp-segmentation", On: false}}, nil},
		{"channels", `{` + confHead + `,"channels":{"rx":2,"tx":3,"combined":0}}`,
			nil, &ethconf.Channels{RX: i64(2), TX: i64(3), Combined: i64(0)}},
		{"args.cni.features merged name by name",
			`{` + confHead + `,"features":{"rx-gro":true,"rx-checksum":true},"args":{"cni":{"features":{"rx-gro":false,"tx-nocache-copy":true}}}}`,
			ethconf.Features{{Name: "rx-gro", On: false}, {Name: "rx-checksum", On: true}, {Name: "tx-nocache-copy", On: true}}, nil},
		{"args.cni.features without features",
			`{` + confHead + `,"args":{"cni":{"features":{"rx-gro":true}}}}`, ethconf.Features{{Name: "rx-gro", On: true}}, nil},
		{"args.cni.channels count by count",
			`{` + confHead + `,"channels":{"rx":2,"tx":2},"args":{"cni":{"channels":{"tx":1,"other":1}}}}`,
			nil, &ethconf.Channels{RX: i64(2), TX: i64(1), Other: i64(1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load([]byte(tc.conf), "")
			if err != nil {
				t.Fatalf("Load(%s) = %v", tc.conf, err)
			}
			if len(c.Features) != 0 || len(tc.wantFeatures) != 0 {
				if !reflect.DeepEqual(c.Features, tc.wantFeatures) {
					t.Errorf("Features = %+v, want %+v", c.Features, tc.wantFeatures)
				}
			}
			if !reflect.DeepEqual(c.Channels, tc.wantChannels) {
				t.Errorf("Channels = %s, want %s", jsonOf(c.Channels), jsonOf(tc.wantChannels))
			}
			if err := c.Validate("eth0"); err != nil {
				t.Errorf("Validate = %v, want nil", err)
			}
		})
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestFeaturesAndChannelsRefused lists what the configuration alone
// refuses, each with code 7 and a message naming the key and value.
func TestFeaturesAndChannelsRefused(t *testing.T) {
	tests := []struct{ name, keys, want string }{
		{"feature value a string", `"features":{"rx-gro":"off"}`, `features "rx-gro": value "off" is not a JSON boolean`},
		{"feature value a number", `"features":{"rx-gro":0}`, `features "rx-gro": value 0 is not a JSON boolean`},
		{"feature value null", `"features":{"rx-gro":null}`, `features "rx-gro": value null is not a JSON boolean`},
		{"features an array", `"features":["rx-gro"]`, `features: want a JSON object of booleans, got an array`},
		{"feature twice", `"features":{"rx-gro":true,"rx-gro":true}`, `features: key "rx-gro" given twice`},
		{"empty feature name", `"features":{"":true}`, `features "": a feature name has 1 to 31 characters`},
		{"feature name too long", `"features":{"` + strings.Repeat("x", 32) + `":true}`, `a feature name has 1 to 31 characters`},
		{"feature name with a space", `"features":{"rx gro":true}`, `features "rx gro": " " is not a letter, digit`},
		{"feature name with a slash", `"features":{"../rx":true}`, `features "../rx": "." is not a letter`},
		{"group against its member", `"features":{"tx-checksumming":false,"tx-checksum-sctp":true}`,
			`features: "tx-checksumming" is false but its member "tx-checksum-sctp" is true`},
		{"group against a member from args", `"features":{"tcp-segmentation-offload":true},"args":{"cni":{"features":{"tx-tcp6-segmentation":false}}}`,
			`its member "tx-tcp6-segmentation" is false`},
		{"unknown channel key", `"channels":{"rxx":2}`, `channels: unknown field "rxx"; the keys are rx, tx, other and combined`},
		{"channel count a string", `"channels":{"rx":"2"}`, `channels.rx: got a JSON string, want an integer`},
		{"channel count a fraction", `"channels":{"tx":1.5}`, `channels.tx: got a JSON number 1.5, want an integer`},
		{"channels an array", `"channels":[1]`, `channels: got a JSON array, want an object of integers`},
		{"negative channel count", `"channels":{"combined":-1}`, `channels.combined -1: must be 0 to 4294967295`},
		{"channel count beyond 32 bits", `"channels":{"other":4294967296}`, `channels.other 4294967296: must be 0 to 4294967295`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conf := `{` + confHead + `,` + tc.keys + `}`
			c, err := Load([]byte(conf), "")
			if err == nil {
				err = c.Validate("eth0")
			}
			if !errors.Is(err, types.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load+Validate(%s) = %v, want an invalid configuration containing %q", conf, err, tc.want)
			}
		})
	}
}

// FuzzLoadFeatures decodes arbitrary configurations: Load and Validate
// never panic, fail only as invalid configuration or decoding error, and
// features that load write back to the same list.
func FuzzLoadFeatures(f *testing.F) {
	f.Add(`{` + confHead + `,"features":{"tx-checksumming":false,"rx-gro":true},"channels":{"rx":2,"tx":3}}`)
	f.Add(`{` + confHead + `,"features":{"tcp-segmentation-offload":true},"args":{"cni":{"features":{"tx-tcp6-segmentation":false},"channels":{"combined":1}}}}`)
	f.Add(`{` + confHead + `,"features":null,"channels":{"other":4294967295}}`)
	f.Fuzz(func(t *testing.T, conf string) {
		c, err := Load([]byte(conf), "")
		if err == nil {
			err = c.Validate("eth0")
		}
		if err != nil {
			if !errors.Is(err, types.ErrInvalidConfig) && !errors.Is(err, types.ErrDecoding) {
				t.Fatalf("Load+Validate(%q) = %v: neither an invalid configuration nor a decoding error", conf, err)
			}
			return
		}
		data, err := json.Marshal(c.Features)
		if err != nil {
			t.Fatalf("marshalling %+v: %v", c.Features, err)
		}
		var back ethconf.Features
		if err := json.Unmarshal(data, &back); err != nil || len(back) != len(c.Features) ||
			(len(back) > 0 && !reflect.DeepEqual(back, c.Features)) {
			t.Fatalf("features %+v wrote %s, which reads back as %+v, %v", c.Features, data, back, err)
		}
	})
}
