package hostlocal

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkAddDel runs one ADD and one DEL through the plugin, in-process,
// against a lease directory that already holds 0 or 10,000 leases of other
// containers in the reference format (the last one recorded in
// last_reserved_ip.0, as on a node that has been running).
//
//	go test -run '^$' -bench BenchmarkAddDel -benchtime 3s ./plugins/ipam/host-local/
func BenchmarkAddDel(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("leases=%d", n), func(b *testing.B) {
			dataDir := b.TempDir()
			seedLeases(b, dataDir, n)
			c := conf("1.0.0", dataDir, `"ranges":[[{"subnet":"10.0.0.0/14"}]]`)
			add := call{cmd: "ADD", id: "bench", conf: c}
			del := call{cmd: "DEL", id: "bench", conf: c}
			// The first call after the reference plugin builds the index: not measured.
			mustRun(b, add)
			mustRun(b, del)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mustRun(b, add)
				mustRun(b, del)
			}
		})
	}
}

// seedLeases writes n reference-format leases from 10.0.0.2 on.
func seedLeases(b *testing.B, dataDir string, n int) {
	b.Helper()
	dir := filepath.Join(dataDir, "testnet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ip := net.IPv4(10, 0, 0, 2).To4()
	var last string
	for i := 0; i < n; i++ {
		last = ip.String()
		content := fmt.Sprintf("container-%d\r\neth0", i)
		if err := os.WriteFile(filepath.Join(dir, last), []byte(content), 0o600); err != nil {
			b.Fatal(err)
		}
		ip = next4(ip)
	}
	if last != "" {
		if err := os.WriteFile(filepath.Join(dir, "last_reserved_ip.0"), []byte(last), 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

func next4(ip net.IP) net.IP {
	out := net.IPv4(ip[0], ip[1], ip[2], ip[3]).To4()
	for i := 3; i >= 0; i-- {
		if out[i]++; out[i] != 0 {
			break
		}
	}
	return out
}
