package k8s

import (
	"strings"
	"testing"
)

// TestKept: the files a network keeps with no pod are told apart from
// what a pod leaves behind (leases, records, cached results, index
// entries), so TestKubernetesNode's leftovers check fails on the latter.
func TestKept(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/var/lib/cni/networks/k8s-pod-network/lock", true},
		{"/var/lib/cni/networks/k8s-pod-network/last_reserved_ip.0", true},
		{"/var/lib/cni/networks/k8s-pod-network/last_reserved_ip.0.swap", true},
		{"/var/lib/cni/networks/.host-local-boot/k8s-pod-network", true},
		{"/var/lib/cni/networks/.host-local-index2/k8s-pod-network/.stamp", true},
		{"/run/cnisuite/fw-backend/c5092/k8s-pod-network/.lock", true},
		{"/var/lib/cni/networks/k8s-pod-network/10.244.1.2", false},
		{"/var/lib/cni/networks/.host-local-index2/k8s-pod-network/10.244.1.2", false},
		{"/run/cnisuite/records/bridge/k8s-pod-network/0123abcd.json", false},
		{"/run/cnisuite/fw-backend/c5092/k8s-pod-network/backend", false},
		{"/var/lib/cni/results/k8s-pod-network-0123abcd-eth0", false},
	}
	for _, tt := range tests {
		if got := kept(tt.path); got != tt.want {
			t.Errorf("kept(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// TestMaskScript: every global setting the kubelet writes gets a file of
// its own, seeded with a value the kubelet never writes, bind-mounted over it.
func TestMaskScript(t *testing.T) {
	script := maskScript(kubeletGlobals)
	for _, m := range kubeletGlobals {
		if m.want == maskSeed {
			t.Errorf("%s: the kubelet writes %s, the mask's seed: its write would not show", m.path, m.want)
		}
		file := "/run/masks/" + strings.ReplaceAll(strings.TrimPrefix(m.path, "/proc/sys/"), "/", ".")
		for _, line := range []string{"echo " + maskSeed + " > " + file, "mount --bind " + file + " " + m.path} {
			if !strings.Contains(script, line+"\n") {
				t.Errorf("maskScript lacks %q:\n%s", line, script)
			}
		}
	}
}
