package natchain

import (
	"errors"
	"strings"
	"testing"
)

func TestEncodeRefusesWhatItDoesNotCover(t *testing.T) {
	for _, spec := range []string{
		"! -s 192.0.2.0/24 -j RETURN",
		"-i eth0 -j RETURN",
		"-s 192.0.2.0/24",
		"-s fd00::/64 -j RETURN",
		"-s 10.0.0.0/8 -s 10.0.0.0/8 -j RETURN",
		"-m tcp --dport 80 -j RETURN",
		"-p tcp -m udp --dport 80 -j RETURN",
		"-p icmp -j RETURN",
		"-p tcp -m tcp --sport 80 -j RETURN",
		"-p tcp -m tcp --dport 80 -j DNAT --to-destination 10.0.0.1:80-90",
		"-p tcp -m tcp --dport 90:80 -j RETURN",
		"-j DNAT --to-destination 10.0.0.1",
		"-j DNAT --to-destination 10.0.0.1:80",
		"-m addrtype --dst-type UNICAST -j RETURN",
		"-m mark --mark 0x1 -j RETURN",
		"-j MARK --set-mark 0x1",
		"-j RETURN -s 10.0.0.0/8",
		"-j MASQUERADE --random",
		"-m comment --comment " + strings.Repeat("x", 256) + " -j RETURN",
	} {
		if _, err := Encode(strings.Fields(spec), true); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Encode(%q) = %v, want ErrUnsupported", spec, err)
		}
	}
}

func TestEncodeShapes(t *testing.T) {
	tests := []struct {
		spec   string
		v4     bool
		exprs  int
		proto  uint32
		jump   string
		source string
	}{
		{"-s 10.88.0.2/32 -d 10.88.0.0/16 -m comment --comment x -j RETURN", true, 7, 0, "", "\x0a\x58\x00\x02"},
		{"-s 10.88.0.2/32 -d 224.0.0.0/4 -m comment --comment x -j RETURN", true, 8, 0, "", "\x0a\x58\x00\x02"},
		{"-s 10.88.0.2/32 -m comment --comment x -j CNIS-MQ-1", true, 5, 0, "CNIS-MQ-1", "\x0a\x58\x00\x02"},
		{"-p sctp -m sctp --dport 9090 -m comment --comment x -j MARK --set-xmark 0x2000/0x2000", false, 6, 132, "", ""},
		{"-d 2001:db8::10/128 -p tcp -m tcp --dport 8080 -j DNAT --to-destination [fd00::2]:80", false, 8, 6, "", ""},
		{"-m addrtype --dst-type LOCAL -m comment --comment x -j CNIS-DN-1", true, 4, 0, "CNIS-DN-1", ""},
		{"-m mark --mark 0x2000/0x2000 -m comment --comment x -j MASQUERADE", true, 6, 0, "", ""},
		{"-s 0.0.0.0/0 -m comment --comment x -j MASQUERADE", true, 3, 0, "", ""},
	}
	for _, tc := range tests {
		r, err := Encode(strings.Fields(tc.spec), tc.v4)
		if err != nil {
			t.Errorf("Encode(%q): %v", tc.spec, err)
			continue
		}
		if len(r.Exprs) != tc.exprs || r.Proto != tc.proto || r.Jump != tc.jump || string(r.Source) != tc.source {
			t.Errorf("Encode(%q) = %d expressions, proto %d, jump %q, source %x; want %d, %d, %q, %x",
				tc.spec, len(r.Exprs), r.Proto, r.Jump, r.Source, tc.exprs, tc.proto, tc.jump, tc.source)
		}
	}
}
