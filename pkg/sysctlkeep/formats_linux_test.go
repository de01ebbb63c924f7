package sysctlkeep

import (
	"path/filepath"
	"testing"

	"cnisuite/test/golden"
)

// TestFormatHolds pins the sysctl holds and the file systemd-sysctl reads
// (docs/formats.md, "Sysctl holds"): one directory per key and value, one
// empty file per holder, and zz-cnisuite.conf listing each held key once.
func TestFormatHolds(t *testing.T) {
	root := t.TempDir()
	k := Keeper{SysctlDir: filepath.Join(root, "sysctl.d"), HoldsDir: filepath.Join(root, "cnisuite", "sysctl-holds")}
	bridge := Holder("bridge", "net1", "c0ffee01", "eth0")
	portmap := Holder("portmap", "net1", "c0ffee01", "eth0")
	for _, h := range []struct{ key, value, holder string }{
		{"net/ipv4/ip_forward", "1", bridge},
		{"net/ipv6/conf/all/forwarding", "1", bridge},
		{"net/ipv4/conf/cni0/route_localnet", "1", portmap},
		{"net/ipv4/ip_forward", "1", portmap},
	} {
		if err := k.Hold(h.key, h.value, h.holder); err != nil {
			t.Fatalf("Hold(%s): %v", h.key, err)
		}
	}
	golden.Check(t, "format_holds", golden.Tree(t, root))
}
