package firewall

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

// claimsOn returns a backend over an in-memory iptables fake (which never
// refuses a port itself) with the node's claims under a temporary
// directory.
func claimsOn(t *testing.T) (*claimed, *Fake, string) {
	root := filepath.Join(t.TempDir(), "cnisuite")
	f := NewFake(KindIPTables)
	return &claimed{f, claimStore{root: root}}, f, root
}

func pmOwnerOf(network, id string) Owner {
	return Owner{Plugin: PluginPortmap, Network: network, ContainerID: id, IfName: "eth0"}
}

// portRules maps ms to a container with an address of each family.
func portRules(ms ...PortMapping) Rules {
	return Rules{PortMaps: &PortMaps{Mappings: ms, ContainerV4: bothFamilies.ContainerV4, ContainerV6: bothFamilies.ContainerV6}}
}

var bothFamilies = &PortMaps{
	ContainerV4: &net.IPNet{IP: net.ParseIP("10.88.0.2"), Mask: net.CIDRMask(16, 32)},
	ContainerV6: &net.IPNet{IP: net.ParseIP("fd00::2"), Mask: net.CIDRMask(64, 128)},
}

func pm(proto string, port, n int, host string) PortMapping {
	return PortMapping{HostPort: port, ContainerPort: port, Protocol: proto, Range: n, HostIP: net.ParseIP(host)}
}

// TestClaimsOverlap: a host port or range of one attachment refuses, with
// code 11 naming the ports asked for, the ports held and their holder,
// every other attachment's port or range of the same protocol that
// overlaps it on an overlapping host address (none = every address,
// 0.0.0.0 / :: every address of the family), across networks; ports next
// to it, other protocols and other addresses pass.
func TestClaimsOverlap(t *testing.T) {
	ctx := context.Background()
	c, f, _ := claimsOn(t)
	holder := pmOwnerOf("net1", "a")
	if err := c.Ensure(ctx, holder, portRules(pm("tcp", 8000, 101, ""), pm("udp", 5353, 0, "10.0.0.1"), pm("tcp", 255, 3, ""))); err != nil {
		t.Fatalf("Ensure(holder): %v", err)
	}
	for _, tc := range []struct {
		name     string
		m        PortMapping
		conflict string // the held ports the message names; "" for none
	}{
		{"port inside the range", pm("tcp", 8050, 0, ""), "tcp 8000-8100 on every address"},
		{"range over the start", pm("tcp", 7990, 20, ""), "tcp 8000-8100"},
		{"range over the end", pm("tcp", 8100, 5, "10.0.0.9"), "tcp 8000-8100"},
		{"range around", pm("tcp", 7000, 2000, ""), "tcp 8000-8100"},
		{"range crossing a bucket", pm("tcp", 257, 0, ""), "tcp 255-257"},
		{"port past the end", pm("tcp", 8101, 0, ""), ""},
		{"port before the start", pm("tcp", 7999, 0, ""), ""},
		{"another protocol", pm("sctp", 8000, 101, ""), ""},
		{"the same address", pm("udp", 5353, 0, "10.0.0.1"), "udp 5353 on 10.0.0.1"},
		{"every IPv4 address", pm("udp", 5353, 0, "0.0.0.0"), "udp 5353 on 10.0.0.1"},
		{"every address", pm("udp", 5350, 10, ""), "udp 5353 on 10.0.0.1"},
		{"another address", pm("udp", 5353, 0, "10.0.0.2"), ""},
		{"every IPv6 address", pm("udp", 5353, 0, "::"), ""},
	} {
		o := pmOwnerOf("net2", "b")
		err := c.Ensure(ctx, o, portRules(tc.m))
		switch {
		case tc.conflict == "" && err != nil:
			t.Errorf("%s: Ensure = %v, want success", tc.name, err)
		case tc.conflict != "" && (!errors.Is(err, ErrConflict) || types.Code(err) != types.CodeTryAgain ||
			!strings.Contains(err.Error(), tc.conflict) || !strings.Contains(err.Error(), "portmap/net1/a/eth0")):
			t.Errorf("%s: Ensure = %v, want code 11 naming %q and portmap/net1/a/eth0", tc.name, err, tc.conflict)
		case tc.conflict != "" && owns(f, o):
			t.Errorf("%s: rules written though the ports are held", tc.name)
		}
		if err := c.Remove(ctx, o); err != nil {
			t.Fatalf("%s: Remove: %v", tc.name, err)
		}
	}
}

// TestClaimsFollowFamilies: an attachment claims only what its rules
// forward: a mapping without hostIP, for a container with an IPv4 address
// only, every IPv4 address; a hostIP of the family it has no address of,
// nothing.
func TestClaimsFollowFamilies(t *testing.T) {
	ctx := context.Background()
	c, _, _ := claimsOn(t)
	v4only := portRules(pm("tcp", 80, 0, ""), pm("udp", 53, 0, "fd00::9"))
	v4only.PortMaps.ContainerV6 = nil
	if err := c.Ensure(ctx, pmOwnerOf("net1", "a"), v4only); err != nil {
		t.Fatalf("Ensure(IPv4 only): %v", err)
	}
	for _, tc := range []struct {
		m        PortMapping
		conflict bool
	}{
		{pm("tcp", 80, 0, ""), true},
		{pm("tcp", 80, 0, "10.0.0.1"), true},
		{pm("tcp", 80, 0, "::"), false},
		{pm("udp", 53, 0, "fd00::9"), false},
	} {
		o := pmOwnerOf("net2", "b")
		if err := c.Ensure(ctx, o, portRules(tc.m)); errors.Is(err, ErrConflict) != tc.conflict {
			t.Errorf("Ensure(%s %d on %v) = %v, want conflict %v", tc.m.Protocol, tc.m.HostPort, tc.m.HostIP, err, tc.conflict)
		}
		if err := c.Remove(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClaimsLifecycle: the same attachment adds again (the same ports,
// then fewer); a refused re-ADD keeps its claims; DEL and GC let go; a
// first ADD whose rules fail lets go of its claims; DEL leaves no claim
// file; with no store (rootless) nothing is claimed or refused.
func TestClaimsLifecycle(t *testing.T) {
	ctx := context.Background()
	c, f, root := claimsOn(t)
	a, b := pmOwnerOf("net1", "a"), pmOwnerOf("net1", "b")
	both := portRules(pm("tcp", 8000, 101, ""), pm("udp", 53, 0, ""))
	for i := 0; i < 2; i++ {
		if err := c.Ensure(ctx, a, both); err != nil {
			t.Fatalf("Ensure(a) #%d: %v", i, err)
		}
	}
	if err := c.Ensure(ctx, a, portRules(pm("udp", 53, 0, ""))); err != nil {
		t.Fatalf("Ensure(a, fewer ports): %v", err)
	}
	if err := c.Ensure(ctx, b, portRules(pm("tcp", 8050, 0, ""))); err != nil {
		t.Errorf("Ensure(b, a port a let go of): %v", err)
	}
	if err := c.Ensure(ctx, a, both); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "portmap/net1/b/eth0") {
		t.Errorf("Ensure(a, the range again, over b's port) = %v, want a conflict naming b", err)
	}
	if err := c.Ensure(ctx, b, portRules(pm("udp", 53, 0, ""))); !errors.Is(err, ErrConflict) {
		t.Errorf("Ensure(b, udp 53) after a's refused re-ADD = %v, want a conflict: a keeps its claims", err)
	}
	if err := c.Remove(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := c.Ensure(ctx, a, both); err != nil {
		t.Errorf("Ensure(a, the range) after b's DEL: %v", err)
	}
	if err := c.GC(ctx, PluginPortmap, "net1", []Owner{{ContainerID: "b", IfName: "eth0"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Ensure(ctx, b, both); err != nil {
		t.Errorf("Ensure(b, a's ports) after GC dropped a: %v", err)
	}
	f.Err = errors.New("the kernel refused")
	if err := c.Ensure(ctx, a, portRules(pm("tcp", 9000, 10, ""))); err == nil {
		t.Fatal("Ensure with failing rules succeeded")
	}
	f.Err = nil
	if err := c.Ensure(ctx, pmOwnerOf("net1", "c"), portRules(pm("tcp", 9005, 0, ""))); err != nil {
		t.Errorf("Ensure(tcp 9005) after a first ADD of 9000-9009 failed: %v", err)
	}
	for _, o := range []Owner{b, pmOwnerOf("net1", "c")} {
		if err := c.Remove(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if left := claimFiles(t, root); len(left) > 0 {
		t.Errorf("claims left after every DEL: %q", left)
	}
	c.store.root = ""
	for _, o := range []Owner{a, b} {
		if err := c.Ensure(ctx, o, both); err != nil {
			t.Errorf("Ensure(%s) without a store: %v", o, err)
		}
	}
}

// TestClaimsRace: twenty attachments asking at once for ports that
// overlap (each a range from 8000 of its own length): exactly one gets
// them, the others are refused with ErrConflict.
func TestClaimsRace(t *testing.T) {
	ctx := context.Background()
	c, _, _ := claimsOn(t)
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func() {
			errs <- c.Ensure(ctx, pmOwnerOf("net1", fmt.Sprint("ctr", i)), portRules(pm("tcp", 8000, i+1, "")))
		}()
	}
	won := 0
	for i := 0; i < 20; i++ {
		switch err := <-errs; {
		case err == nil:
			won++
		case !errors.Is(err, ErrConflict):
			t.Errorf("Ensure: %v, want success or ErrConflict", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of 20 racing attachments got overlapping ports, want 1", won)
	}
}

// claimFiles lists the regular files under root's claim buckets and owner
// files (the lock aside).
func claimFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.Contains(p, "/"+claimsDir+"/") && d.Name() != claimsLock {
			out = append(out, p)
		}
		return err
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// BenchmarkClaims: the claim and release of one attachment's port (ADD
// and DEL) beside n other attachments' ports 30000 to 30000+n-1; a port
// in a bucket they fill (30000+n) and one far from them (50000).
func BenchmarkClaims(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10, 1000} {
		for _, port := range []int{30000 + n, 50000} {
			b.Run(fmt.Sprintf("pods=%d/port=%d", n, port), func(b *testing.B) {
				s := claimStore{root: filepath.Join(b.TempDir(), "cnisuite")}
				for i := 0; i < n; i++ {
					if _, err := s.take(ctx, pmOwnerOf("net1", fmt.Sprint("ctr", i)), claimsOf(portRules(pm("tcp", 30000+i, 0, "")).PortMaps)); err != nil {
						b.Fatal(err)
					}
				}
				o := pmOwnerOf("net1", "new")
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.take(ctx, o, claimsOf(portRules(pm("tcp", port, 0, "")).PortMaps)); err != nil {
						b.Fatal(err)
					}
					if err := s.release(ctx, o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
