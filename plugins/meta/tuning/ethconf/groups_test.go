package ethconf

import "testing"

func TestFeatureGroups(t *testing.T) {
	tests := []struct {
		group, name string
		in          bool
	}{
		{"tx-checksumming", "tx-checksum-ip-generic", true},
		{"tx-checksumming", "tx-checksum-sctp", true},
		{"tx-checksumming", "rx-checksum", false},
		{"rx-checksumming", "rx-checksum", true},
		{"scatter-gather", "tx-scatter-gather-fraglist", true},
		{"tcp-segmentation-offload", "tx-tcp-segmentation", true},
		{"tcp-segmentation-offload", "tx-tcp6-segmentation", true},
		{"tcp-segmentation-offload", "tx-udp-segmentation", false},
		{"generic-receive-offload", "rx-gro", true},
		{"generic-receive-offload", "rx-gro-hw", false},
		{"rx-gro", "rx-gro", false}, // a kernel name is no group
	}
	for _, tc := range tests {
		if got := InGroup(tc.group, tc.name); got != tc.in {
			t.Errorf("inGroup(%q, %q) = %v, want %v", tc.group, tc.name, got, tc.in)
		}
	}
	// No two groups share a member: a kernel name belongs to one at most.
	names := []string{"tx-checksum-ipv4", "tx-scatter-gather", "tx-tcp-ecn-segmentation", "tx-generic-segmentation",
		"rx-lro", "rx-vlan-hw-parse", "tx-vlan-hw-insert", "rx-ntuple-filter", "rx-hashing"}
	for _, n := range names {
		var in []string
		for g := range Groups {
			if InGroup(g, n) {
				in = append(in, g)
			}
		}
		if len(in) != 1 {
			t.Errorf("%q is in groups %q, want exactly one", n, in)
		}
	}
}
