package natchain

import (
	"fmt"
	"testing"
)

func TestStale(t *testing.T) {
	names := []string{"CNIS-MQ-aaa", "POSTROUTING", "CNIS-DN-bbb", "CNIS-MQ-kept", "CNIS-MQ-aaa", "OTHER-MQ-x"}
	got := Stale(names, []string{"CNIS-MQ-", "CNIS-DN-"}, map[string]bool{"CNIS-MQ-kept": true})
	if fmt.Sprint(got) != "[CNIS-DN-bbb CNIS-MQ-aaa]" {
		t.Errorf("Stale = %v, want [CNIS-DN-bbb CNIS-MQ-aaa]", got)
	}
}

func TestParseDNAT(t *testing.T) {
	tests := []struct {
		rule, want string
		ok         bool
	}{
		{`-A CNIS-DN-x -d 192.0.2.1/32 -p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.0.0.2:80`, "8080/tcp on 192.0.2.1", true},
		{`-A CNIS-DN-x -p udp -m udp --dport 53 -j DNAT --to-destination 10.0.0.2:53`, "53/udp on <nil>", true},
		{`-A CNIS-DN-x ! -d 10.0.0.0/8 -p tcp -m tcp --dport 80 -j DNAT --to-destination 10.0.0.2:80`, "80/tcp on <nil>", true},
		{`-A CNIS-DN-x -p tcp -m tcp --dport 80 -j MARK --set-xmark 0x2000/0x2000`, "", false},
	}
	for _, tt := range tests {
		m, ok := ParseDNAT(tt.rule)
		got := fmt.Sprintf("%d/%s on %v", m.HostPort, m.Protocol, m.HostIP)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParseDNAT(%q) = %s, %v, want %s, %v", tt.rule, got, ok, tt.want, tt.ok)
		}
	}
}
