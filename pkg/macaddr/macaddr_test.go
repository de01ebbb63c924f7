package macaddr

import (
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

func TestParseUnicast(t *testing.T) {
	tests := []struct {
		value string
		want  string // MAC, or a piece of the error
		ok    bool
	}{
		{"0A:58:0A:58:00:02", "0a:58:0a:58:00:02", true},
		{"not-a-mac", `mac "not-a-mac": address not-a-mac: invalid MAC address`, false},
		{"00:00:00:00:fe:80:00:00", "not a 6-byte Ethernet address", false},
		{"01:00:5e:00:00:01", "multicast address cannot be an interface address", false},
	}
	for _, tt := range tests {
		mac, err := ParseUnicast("mac", tt.value)
		if tt.ok {
			if err != nil || mac.String() != tt.want {
				t.Errorf("ParseUnicast(%q) = %v, %v, want %s", tt.value, mac, err, tt.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || types.Code(err) != types.CodeInvalidConfig {
			t.Errorf("ParseUnicast(%q) = %v, %v, want code 7 error containing %q", tt.value, mac, err, tt.want)
		}
	}
}

func TestChoose(t *testing.T) {
	mac, err := Choose(Source{"CNI_ARGS MAC", "02:00:00:00:00:01"}, Source{"args.cni.mac", ""}, Source{"runtimeConfig.mac", "02:00:00:00:00:03"})
	if err != nil || mac.String() != "02:00:00:00:00:03" {
		t.Errorf("Choose = %v, %v, want the last given source's 02:00:00:00:00:03", mac, err)
	}
	if mac, err := Choose(Source{"a", ""}); mac != nil || err != nil {
		t.Errorf("Choose(nothing given) = %v, %v, want nil, nil", mac, err)
	}
	_, err = Choose(Source{"CNI_ARGS MAC", "zz"}, Source{"runtimeConfig.mac", "02:00:00:00:00:03"})
	if err == nil || !strings.Contains(err.Error(), `CNI_ARGS MAC "zz"`) {
		t.Errorf("Choose(bad first source) = %v, want an error naming CNI_ARGS MAC", err)
	}
}

func TestFromCNI(t *testing.T) {
	for _, tt := range []struct {
		cniArgs, args, runtime, want string
	}{
		{"IgnoreUnknown=1;MAC=0a:00:00:00:00:01", "", "", "0a:00:00:00:00:01"},
		{"MAC=0a:00:00:00:00:01", "0a:00:00:00:00:02", "", "0a:00:00:00:00:02"},
		{"MAC=0a:00:00:00:00:01", "0a:00:00:00:00:02", "0a:00:00:00:00:03", "0a:00:00:00:00:03"},
		{"", "", "", ""},
	} {
		mac, err := FromCNI(tt.cniArgs, tt.args, tt.runtime)
		if err != nil || mac.String() != tt.want {
			t.Errorf("FromCNI(%q, %q, %q) = %v, %v, want %q", tt.cniArgs, tt.args, tt.runtime, mac, err, tt.want)
		}
	}
	if _, err := FromCNI("MAC=zz", "", "0a:00:00:00:00:03"); err == nil || !strings.Contains(err.Error(), `CNI_ARGS MAC "zz"`) {
		t.Errorf("FromCNI(bad CNI_ARGS MAC) = %v, want an error naming CNI_ARGS MAC", err)
	}
	if _, err := FromCNI("MAC", "", ""); err == nil {
		t.Error("FromCNI(CNI_ARGS without '=') = nil, want its error")
	}
}

func TestSame(t *testing.T) {
	mac, _ := ParseUnicast("mac", "0a:58:0a:58:00:02")
	if !Same("0A:58:0A:58:00:02", mac) || Same("0a:58:0a:58:00:03", mac) || Same("junk", mac) {
		t.Errorf("Same: wrong answer for %s", mac)
	}
}
