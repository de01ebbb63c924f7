package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/link"
	"cnisuite/test/sandbox"
)

// TestParallelAddDel runs 40 ADDs at once on a node without the bridge, then
// 40 DELs at once: every ADD succeeds with its own addresses, the bridge ends
// with exactly one gateway address per family, and the DELs leave no port,
// no lease and no rule.
func TestParallelAddDel(t *testing.T) {
	const count = 40
	leases := t.TempDir()
	ipam := fmt.Sprintf(`{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.240.0.0/24"}],[{"subnet":"fd24::/64"}]]}`, leases)
	n := newNet(t, "1.1.0", "bpar", `"isGateway":true,"ipMasq":true`, ipam)
	ctrs := make([]*ctr, count)
	for i := range ctrs {
		ctrs[i] = &ctr{id: fmt.Sprintf("par-%02d", i), ns: sandbox.NewNS(t)}
		ctrs[i].rc = n.runtimeConf(ctrs[i].id, ctrs[i].ns)
	}
	errs := runAll(ctrs, func(c *ctr) (err error) {
		c.res, err = n.tryAdd(c.rc)
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("ADD %s = %v", ctrs[i].id, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	seen := map[string]string{}
	for _, c := range ctrs {
		for _, ip := range c.res.IPs {
			if other, dup := seen[ip.Address.IP.String()]; dup {
				t.Errorf("%s and %s both got %v", other, c.id, ip.Address.IP)
			}
			seen[ip.Address.IP.String()] = c.id
		}
	}
	if got := strings.Join(bridgeAddrs(t, "bpar"), ","); got != "10.240.0.1/24,fd24::1/64" {
		t.Errorf("bridge addresses = %s, want 10.240.0.1/24,fd24::1/64", got)
	}
	if ports := bridgePorts(t, "bpar"); len(ports) != count {
		t.Errorf("bridge has %d ports, want %d", len(ports), count)
	}
	for i, err := range runAll(ctrs, func(c *ctr) error { return n.rt.DelNetworkList(context.Background(), n.list, c.rc) }) {
		if err != nil {
			t.Errorf("DEL %s = %v", ctrs[i].id, err)
		}
	}
	assertNothingLeft(t, "bpar", leases, seen)
}

func runAll(ctrs []*ctr, fn func(*ctr) error) []error {
	errs := make([]error, len(ctrs))
	var wg sync.WaitGroup
	for i, c := range ctrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(c)
		}()
	}
	wg.Wait()
	return errs
}

func assertNothingLeft(t *testing.T, br, leases string, ips map[string]string) {
	t.Helper()
	if ports := bridgePorts(t, br); len(ports) != 0 {
		t.Errorf("ports left after DEL: %v", ports)
	}
	links, err := link.LinkList(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if _, ok := l.(*netlink.Veth); ok {
			t.Errorf("veth %s left after DEL", l.Attrs().Name)
		}
	}
	rs := ruleset(t)
	for ip := range ips {
		if strings.Contains(rs, ip+" ") || strings.Contains(rs, ip+"/") {
			t.Errorf("rules still mention %s after DEL", ip)
		}
	}
	entries, _ := os.ReadDir(leases + "/net-" + br)
	for _, e := range entries {
		for ip := range ips {
			if e.Name() == ip {
				t.Errorf("lease %s left after DEL", e.Name())
			}
		}
	}
}
