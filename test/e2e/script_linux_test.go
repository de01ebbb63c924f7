package e2e

import (
	"strings"
	"testing"
)

func TestCgroupMounts(t *testing.T) {
	tests := []struct {
		name      string
		cgroup    string
		want      []string
		wantNotIn []string
	}{
		{
			name:   "hybrid_v1_layout",
			cgroup: "9:name=systemd:/\n4:memory:/x\n2:cpu,cpuacct:/\n0::/\n",
			want: []string{
				"mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup",
				"mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd",
				"mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory",
				"mount -t cgroup -o cpu,cpuacct cgroup /sys/fs/cgroup/cpu,cpuacct",
				"mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified",
			},
		},
		{
			name:      "unified_v2_only",
			cgroup:    "0::/user.slice\n",
			want:      []string{"mount -t cgroup2 cgroup2 /sys/fs/cgroup\n"},
			wantNotIn: []string{"tmpfs", "-t cgroup "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cgroupMounts(tt.cgroup)
			if !strings.HasPrefix(got, `if [ -z "$(ls -A /sys/fs/cgroup)" ]; then`) {
				t.Errorf("cgroupMounts does not guard against mounted hierarchies:\n%s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("cgroupMounts(%q) lacks %q:\n%s", tt.cgroup, w, got)
				}
			}
			for _, w := range tt.wantNotIn {
				if strings.Contains(got, w) {
					t.Errorf("cgroupMounts(%q) has %q:\n%s", tt.cgroup, w, got)
				}
			}
		})
	}
}

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
