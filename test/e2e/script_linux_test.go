package e2e

import (
	"strings"
	"testing"
)

func TestMissingFootprint(t *testing.T) {
	tests := []struct {
		name  string
		found []string
		want  string
	}{
		{"everything", []string{"veth left: 3: veth1", "state file left: /x/10.0.0.2", "nft rule left: dnat"}, ""},
		{"nothing", nil, "veth state file rule"},
		{"no_rule", []string{"veth left: 3: veth1", "state file left: /x/10.0.0.2"}, "rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(missingFootprint(tt.found), " "); got != tt.want {
				t.Errorf("missingFootprint(%q) = %q, want %q", tt.found, got, tt.want)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/work/main/bin", "'/work/main/bin'"},
		{"it's", `'it'\''s'`},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
