package backup

import (
	"path/filepath"
	"testing"

	"cnisuite/plugins/meta/tuning/ethconf"
	"cnisuite/test/golden"
)

// TestFormatBackup pins tuning's backup file (docs/formats.md, "tuning"):
// the reference plugin's name and link keys (mac, promisc, mtu, allmulti,
// txQLen) and ours (network, sysctl, features, channels), every key set,
// and one with only what the reference writes.
func TestFormatBackup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tuning")
	s := Store{Dir: dir}
	off, on, qlen, rx, combined := false, true, 1000, uint32(2), uint32(4)
	full := &State{
		Network: "net1", MAC: "0a:58:0a:58:00:02", Promisc: &off, MTU: 1500, Allmulti: &on, TxQLen: &qlen,
		Sysctl:   []Setting{{Path: "net/ipv4/conf/eth0/arp_notify", Value: "0"}, {Path: "net/ipv6/conf/eth0/accept_ra", Value: "1"}},
		Features: map[string]bool{"tx-checksumming": true, "rx-gro": false},
		Channels: &ethconf.ChannelState{RX: &rx, Combined: &combined},
	}
	if err := s.Save("c0ffee01", "eth0", full); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if err := s.Save("c0ffee02", "net1", &State{MTU: 9000}); err != nil {
		t.Fatalf("Save(mtu only): %v", err)
	}
	golden.Check(t, "format_backup", golden.Tree(t, filepath.Dir(dir)))
}
