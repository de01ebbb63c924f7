package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/firewall"
	"cnisuite/test/sandbox"
)

// TestLatencyFigures measures ADD, CHECK and DEL of the portmap binary at
// 10 and at 500 existing containers, per backend, and logs the medians. It
// asserts nothing about time; run it with CNISUITE_PORTMAP_BENCH=1:
//
//	CNISUITE_PORTMAP_BENCH=1 scripts/sandbox.sh go test ./plugins/meta/portmap -run LatencyFigures -v
func TestLatencyFigures(t *testing.T) {
	sandbox.Require(t)
	if os.Getenv("CNISUITE_PORTMAP_BENCH") != "1" {
		t.Skip("set CNISUITE_PORTMAP_BENCH=1 to measure")
	}
	bin := filepath.Join(sandbox.Bin(t), "portmap")
	netns := sandbox.NewNS(t).Path()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "pmbench0"}}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	defer netlink.LinkDel(br)
	_ = netlink.AddrAdd(br, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP("10.200.0.1"), Mask: net.CIDRMask(16, 32)}})
	_ = netlink.LinkSetUp(br)
	for _, backend := range []string{firewall.KindNFTables, firewall.KindIPTables} {
		b := &benchRun{t: t, bin: bin, netns: netns, backend: backend}
		for i := 0; i < 500; i++ {
			if i == 10 {
				b.measure(i)
			}
			b.run("ADD", i)
		}
		b.measure(500)
		for i := 0; i < 500; i++ {
			b.run("DEL", i)
		}
	}
}

type benchRun struct {
	t                   *testing.T
	bin, netns, backend string
}

func (b *benchRun) conf(i int) string {
	ip := fmt.Sprintf("10.200.%d.%d", 1+i/250, 2+i%250)
	return fmt.Sprintf(`{"cniVersion":"1.0.0","name":"bench","type":"portmap","backend":%q,
	 "runtimeConfig":{"portMappings":[{"hostPort":%d,"containerPort":80,"protocol":"tcp"},{"hostPort":%d,"containerPort":53,"protocol":"udp"}]},
	 "prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":%q}],
	   "ips":[{"address":"%s/16","interface":0},{"address":"fd00:200::%x/64","interface":0}]}}`,
		b.backend, 10000+i, 10000+i, b.netns, ip, 2+i)
}

// run executes one verb for container i and returns its duration.
func (b *benchRun) run(cmd string, i int) time.Duration {
	c := exec.Command(b.bin)
	c.Env = []string{"CNI_COMMAND=" + cmd, fmt.Sprintf("CNI_CONTAINERID=bench-%d", i), "CNI_NETNS=" + b.netns,
		"CNI_IFNAME=eth0", "CNI_PATH=/nonexistent", "PATH=" + os.Getenv("PATH")}
	c.Stdin = strings.NewReader(b.conf(i))
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	d := time.Since(start)
	if err != nil {
		b.t.Fatalf("%s %d (%s): %v: %s", cmd, i, b.backend, err, out.String())
	}
	return d
}

// measure times ten ADDs, CHECKs and DELs of extra containers with n
// containers in place.
func (b *benchRun) measure(n int) {
	var add, check, del []time.Duration
	for k := 0; k < 10; k++ {
		i := 1000 + k
		add = append(add, b.run("ADD", i))
		check = append(check, b.run("CHECK", i))
		del = append(del, b.run("DEL", i))
	}
	b.t.Logf("%s at %d containers: ADD %v, CHECK %v, DEL %v (median of 10)", b.backend, n, median(add), median(check), median(del))
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2].Round(10 * time.Microsecond)
}
