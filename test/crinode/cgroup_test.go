package crinode

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
			got := CgroupMounts(tt.cgroup)
			if !strings.HasPrefix(got, `if [ -z "$(ls -A /sys/fs/cgroup)" ]; then`) {
				t.Errorf("CgroupMounts does not guard against mounted hierarchies:\n%s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("CgroupMounts(%q) lacks %q:\n%s", tt.cgroup, w, got)
				}
			}
			for _, w := range tt.wantNotIn {
				if strings.Contains(got, w) {
					t.Errorf("CgroupMounts(%q) has %q:\n%s", tt.cgroup, w, got)
				}
			}
		})
	}
}
