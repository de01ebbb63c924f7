package resync

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnisuite/pkg/records"
	"cnisuite/pkg/sysctlkeep"
)

// pruneHolds keeps the holds of recorded attachments and releases the
// others (a DEL killed after removing its record, a GC'd pod); a record
// that is not valid names no attachment.
func TestPruneHolds(t *testing.T) {
	root := t.TempDir()
	s := records.Store{Root: filepath.Join(root, "records")}
	k := sysctlkeep.Keeper{SysctlDir: filepath.Join(root, "sysctl.d"), HoldsDir: filepath.Join(root, "holds")}
	file := filepath.Join(k.SysctlDir, sysctlkeep.FileName)
	write(t, s, "bridge", "net1", "live", "")
	write(t, s, "portmap", "net1", "live", "")
	bad := filepath.Join(s.Root, "bridge", "net1", records.FileName("bad", "eth0"))
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	holds := map[string]string{
		sysctlkeep.Holder("bridge", "net1", "live", "eth0"):  "net/ipv4/ip_forward",
		sysctlkeep.Holder("portmap", "net1", "live", "eth0"): "net/ipv4/conf/cni0/route_localnet",
		sysctlkeep.Holder("bridge", "net1", "gone", "eth0"):  "net/ipv6/conf/all/forwarding",
		sysctlkeep.Holder("portmap", "net1", "bad", "eth0"):  "net/ipv4/conf/eth9/route_localnet",
	}
	for h, key := range holds {
		if err := k.Hold(key, "1", h); err != nil {
			t.Fatal(err)
		}
	}
	// Fresh holds of attachments without a record stay, but for those of
	// attachments GC dropped.
	if err := pruneHolds(s, k, time.Now().Add(-time.Hour), holders("bridge", "net1", []records.Attachment{{ContainerID: "gone", IfName: "eth0"}})); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(file); strings.Contains(string(data), "ipv6") || !strings.Contains(string(data), "eth9") {
		t.Errorf("after pruneHolds of gone's holds the file holds\n%s\nwant eth9's route_localnet still, ipv6 forwarding no more", data)
	}
	if err := pruneHolds(s, k, time.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	if !strings.Contains(got, "net/ipv4/ip_forward = 1") || !strings.Contains(got, "net/ipv4/conf/cni0/route_localnet = 1") ||
		strings.Contains(got, "ipv6") || strings.Contains(got, "eth9") {
		t.Errorf("after pruneHolds the file holds\n%s\nwant the live attachment's two keys alone", got)
	}
}
