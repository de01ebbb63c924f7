package nftables

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"testing"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/test/fwtest"
	"cnisuite/test/sandbox"
)

// TestStrayElementsGiveWay: when an operator deletes an attachment's ledger
// chains and not their elements, the elements hold host ports and
// addresses for nobody; the next owner of those keys takes them over,
// while a key of a live owner is still refused.
func TestStrayElementsGiveWay(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	fwtest.InNS(t, func() {
		b := New()
		r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })
		gone := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "gone", IfName: "eth0"}
		if err := b.Ensure(ctx, gone, r); err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{nftmodel.PrefixDNAT, nftmodel.PrefixHairpin} {
			name := nftmodel.ChainName(prefix, gone)
			if out, err := exec.Command("sh", "-c", "nft flush chain ip cnisuite_portmap "+name+" && nft delete chain ip cnisuite_portmap "+name).CombinedOutput(); err != nil {
				t.Fatalf("deleting %s: %v: %s", name, err, out)
			}
		}
		next := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "next", IfName: "eth0"}
		if err := b.Ensure(ctx, next, r); err != nil {
			t.Fatalf("Ensure over stray elements: %v", err)
		}
		if err := b.Check(ctx, next, r); err != nil {
			t.Errorf("CHECK of the owner that took the stray keys: %v", err)
		}
		live := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "live", IfName: "eth0"}
		if err := b.Ensure(ctx, live, r); !errors.Is(err, fwapi.ErrConflict) {
			t.Errorf("Ensure of keys a live owner holds = %v, want ErrConflict", err)
		}
		if err := b.Remove(ctx, next); err != nil {
			t.Fatal(err)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}

// TestSubnetChainHeldByLastOwner: the element that keeps traffic within a
// subnet from being masqueraded (masq_nets, hairpin_nets) is one per
// subnet, held by every owner with an address in it: it stays while one
// is left, whatever the order of DELs, and goes with the last.
func TestSubnetChainHeldByLastOwner(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	fwtest.InNS(t, func() {
		b := New()
		owners := []fwapi.Owner{
			{Plugin: "bridge", Network: "net1", ContainerID: "a", IfName: "eth0"},
			{Plugin: "bridge", Network: "net1", ContainerID: "b", IfName: "eth0"},
			{Plugin: "bridge", Network: "net2", ContainerID: "c", IfName: "eth0"}, // the same subnet, another network
		}
		rules := func(i int) fwapi.Rules {
			r := fwtest.PortRules(t, func(p *fwapi.PortMaps) {
				p.ContainerV6 = nil
				p.ContainerV4.IP = nextIP(nextIP(p.ContainerV4.IP)) // 10.88.0.4, .5, .6
				for k := 0; k < i; k++ {
					p.ContainerV4.IP = nextIP(p.ContainerV4.IP)
				}
				for k := range p.Mappings {
					p.Mappings[k].HostPort += 100 * i
				}
			})
			r.Masq = []fwapi.Masq{{Addr: *r.PortMaps.ContainerV4}}
			return r
		}
		for i, o := range owners {
			if err := b.Ensure(ctx, o, rules(i)); err != nil {
				t.Fatalf("Ensure(%s): %v", o, err)
			}
		}
		for _, i := range []int{1, 0} {
			if err := b.Remove(ctx, owners[i]); err != nil {
				t.Fatal(err)
			}
			if err := b.Check(ctx, owners[2], rules(2)); err != nil {
				t.Errorf("CHECK of the last owner in the subnet after %s's DEL: %v", owners[i], err)
			}
		}
		if err := b.Remove(ctx, owners[2]); err != nil {
			t.Fatal(err)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}

// TestFirstOwnersOfASubnetAtOnce: the first attachments of a subnet, added
// at the same time (a burst on a fresh node), all write its subnet chain
// and element; none may fail for it, and the element stays until the last
// is removed.
func TestFirstOwnersOfASubnetAtOnce(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	netns := sandbox.NewNS(t)
	const n = 24
	b := New()
	owners := make([]fwapi.Owner, n)
	rules := make([]fwapi.Rules, n)
	for i := range owners {
		owners[i] = fwapi.Owner{Plugin: "bridge", Network: "net1", ContainerID: fmt.Sprintf("c%d", i), IfName: "eth0"}
		ip := net.IPv4(10, 88, 1, byte(i+2)).To4()
		r := fwtest.PortRules(t, func(p *fwapi.PortMaps) {
			p.ContainerV6 = nil
			p.ContainerV4 = &net.IPNet{IP: ip, Mask: net.CIDRMask(16, 32)}
			for k := range p.Mappings {
				p.Mappings[k].HostPort += 100 * (i + 1)
			}
		})
		r.Masq = []fwapi.Masq{{Addr: *r.PortMaps.ContainerV4}}
		rules[i] = r
	}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range owners {
		wg.Add(1)
		go func(i int) { // each in the namespace, on a socket of its own
			defer wg.Done()
			errs <- netns.Do(func() error { return b.Ensure(ctx, owners[i], rules[i]) })
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Ensure beside the subnet's other first owners: %v", err)
		}
	}
	// Then every owner leaves at once (the last ones race to release the
	// subnet chain), and comes back at once.
	for _, add := range []bool{false, true} {
		errs = make(chan error, n)
		for i := range owners {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				errs <- netns.Do(func() error {
					if add {
						return b.Ensure(ctx, owners[i], rules[i])
					}
					return b.Remove(ctx, owners[i])
				})
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("ADD or DEL (add %v) beside the subnet's other owners: %v", add, err)
			}
		}
	}
	err := netns.Do(func() error {
		for i := range owners {
			if err := b.Check(ctx, owners[i], rules[i]); err != nil {
				t.Errorf("CHECK(%s): %v", owners[i], err)
			}
		}
		for _, o := range owners {
			if err := b.Remove(ctx, o); err != nil {
				return err
			}
		}
		fwtest.AssertNoOwnerRules(t)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestElementsRepaired: the fixed rules act on the elements alone, so an
// element deleted, or changed to map elsewhere, by another hand is what
// CHECK must see and what the next Ensure (the watcher's repair) must put
// back, with the owner's chain left as it is.
func TestElementsRepaired(t *testing.T) {
	sandbox.Require(t)
	ctx := context.Background()
	fwtest.InNS(t, func() {
		b := New()
		o := fwapi.Owner{Plugin: "portmap", Network: "net1", ContainerID: "c1", IfName: "eth0"}
		r := fwtest.PortRules(t, func(p *fwapi.PortMaps) { p.ContainerV6 = nil })
		if err := b.Ensure(ctx, o, r); err != nil {
			t.Fatal(err)
		}
		pm := nftmodel.ChainName(nftmodel.PrefixDNAT, o)
		for _, tamper := range []string{
			"delete element ip cnisuite_portmap port_dnat { tcp . 8080 }",
			"delete element ip cnisuite_portmap port_dnat { tcp . 8080 }; " +
				`add element ip cnisuite_portmap port_dnat { tcp . 8080 comment "` + pm + `" : 10.88.0.99 . 80 }`,
		} {
			if out, err := exec.Command("nft", tamper).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %s", tamper, err, out)
			}
			if err := b.Check(ctx, o, r); !errors.Is(err, fwapi.ErrMissing) {
				t.Errorf("CHECK after %q = %v, want ErrMissing", tamper, err)
			}
			if err := b.Ensure(ctx, o, r); err != nil {
				t.Errorf("Ensure after %q: %v", tamper, err)
			}
			if err := b.Check(ctx, o, r); err != nil {
				t.Errorf("CHECK after the repair of %q: %v", tamper, err)
			}
		}
		if err := b.Remove(ctx, o); err != nil {
			t.Fatal(err)
		}
		fwtest.AssertNoOwnerRules(t)
	})
}

// nextIP is the address after ip (its last byte plus one).
func nextIP(ip net.IP) net.IP {
	out := append(net.IP{}, ip...)
	out[len(out)-1]++
	return out
}
