package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"cnisuite/pkg/ns"
	"cnisuite/test/sandbox"
)

// libcniList is a 1.1.0 network: podman 4.3 and containerd 1.6 reject
// 1.1.0 results, so the runtime library is what exercises it.
const libcniList = `{
  "cniVersion": "1.1.0",
  "name": "e2e-libcni",
  "plugins": [
    {
      "type": "bridge", "bridge": "cni-e2e2", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": %q,
        "ranges": [[{ "subnet": "10.91.0.0/24" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "tuning", "sysctl": { "net.ipv4.conf.IFNAME.arp_notify": "1" } },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}`

// libcniWorld is the state of TestRuntimeLibrary: a node namespace, two
// containers, and two runtimes — one that keeps track of its attachment and
// one that lost it (its own result cache), as after a runtime crash.
type libcniWorld struct {
	node           string // path of the node's network namespace
	list           *libcni.NetworkConfigList
	rt, lostRT     *libcni.CNIConfig
	keep, lost     *libcni.RuntimeConf
	keepIP, lostIP string
	dirs           []string // where leases, backups and cached results live
}

// TestRuntimeLibrary drives the verbs the runtimes above do not send —
// CHECK, GC and STATUS — at 1.1.0 through the runtime library: two
// containers are added, CHECK and STATUS pass, GC keeping only the first
// removes the second's lease, backups and rules while the first stays
// whole, and DEL of both leaves nothing.
func TestRuntimeLibrary(t *testing.T) {
	sandbox.Require(t)
	w := newLibcniWorld(t)
	ctx := context.Background()
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"ADD", w.add},
		{"CHECK", w.check},
		{"STATUS", func(ctx context.Context) error { return w.rt.GetStatusNetworkList(ctx, w.list) }},
		{"GC", w.gc},
		{"DEL", w.del},
	}
	for _, s := range steps {
		var stepErr error
		if err := ns.Do(w.node, func() error { stepErr = s.fn(ctx); return nil }); err != nil {
			t.Fatalf("entering the node namespace: %v", err)
		}
		if stepErr != nil {
			t.Fatalf("%s: %v", s.name, stepErr)
		}
		t.Logf("%s: ok", s.name)
	}
	w.requireClean(t, w.keep.ContainerID, w.keepIP)
	w.requireClean(t, w.lost.ContainerID, w.lostIP)
}

func newLibcniWorld(t *testing.T) *libcniWorld {
	bin := pluginDir(t)
	node := sandbox.NewNS(t)
	dataDir := t.TempDir()
	keepCache, lostCache := t.TempDir(), t.TempDir()
	w := &libcniWorld{
		node:   node.Path(),
		list:   sandbox.ConfList(t, fmt.Sprintf(libcniList, dataDir)),
		rt:     libcni.NewCNIConfigWithCacheDir([]string{bin}, keepCache, nil),
		lostRT: libcni.NewCNIConfigWithCacheDir([]string{bin}, lostCache, nil),
		keep:   &libcni.RuntimeConf{ContainerID: uniqueName("keep"), NetNS: sandbox.NewNS(t).Path(), IfName: "eth0"},
		lost: &libcni.RuntimeConf{ContainerID: uniqueName("lost"), NetNS: sandbox.NewNS(t).Path(), IfName: "eth0",
			CapabilityArgs: map[string]any{"portMappings": []map[string]any{
				{"hostPort": 8082, "containerPort": 80, "protocol": "tcp"}}}},
		dirs: []string{dataDir, "/run/cni", keepCache, lostCache},
	}
	return w
}

func (w *libcniWorld) add(ctx context.Context) error {
	var err error
	if w.keepIP, err = addOne(ctx, w.rt, w.list, w.keep); err != nil {
		return err
	}
	w.lostIP, err = addOne(ctx, w.lostRT, w.list, w.lost)
	return err
}

// addOne adds one attachment and returns its IPv4 address, checking the
// result is a 1.1.0 one with an address in the range.
func addOne(ctx context.Context, rt *libcni.CNIConfig, list *libcni.NetworkConfigList, rc *libcni.RuntimeConf) (string, error) {
	res, err := rt.AddNetworkList(ctx, list, rc)
	if err != nil {
		return "", fmt.Errorf("%s: %w", rc.ContainerID, err)
	}
	if v := res.Version(); v != "1.1.0" {
		return "", fmt.Errorf("%s: result version %q, want 1.1.0", rc.ContainerID, v)
	}
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return "", err
	}
	_, subnet, _ := net.ParseCIDR("10.91.0.0/24")
	for _, ip := range r.IPs {
		if subnet.Contains(ip.Address.IP) {
			return ip.Address.IP.String(), nil
		}
	}
	return "", fmt.Errorf("%s: no address in %s in the result: %v", rc.ContainerID, subnet, r.IPs)
}

func (w *libcniWorld) check(ctx context.Context) error {
	return errors.Join(w.rt.CheckNetworkList(ctx, w.list, w.keep), w.lostRT.CheckNetworkList(ctx, w.list, w.lost))
}

// gc sends GC naming only the kept attachment, then checks what went and
// what stayed.
func (w *libcniWorld) gc(ctx context.Context) error {
	run := nsRunner(w.node)
	before := append(vethLeft(run), stateFiles(w.dirs[:2], w.lost.ContainerID, w.lostIP)...)
	before = append(before, rulesLeft(run, w.lost.ContainerID, w.lostIP)...)
	if missing := missingFootprint(before); len(missing) > 0 {
		return fmt.Errorf("before GC, no %v of %s among:\n  %s", missing, w.lost.ContainerID, strings.Join(before, "\n  "))
	}
	valid := &libcni.GCArgs{ValidAttachments: []cnitypes.GCAttachment{{ContainerID: w.keep.ContainerID, IfName: "eth0"}}}
	if err := w.rt.GCNetworkList(ctx, w.list, valid); err != nil {
		return err
	}
	var errs []error
	plugin := w.dirs[:2] // the lost runtime's own cache is not the plugins' business
	if left := stateFiles(plugin, w.lost.ContainerID, w.lostIP); len(left) > 0 {
		errs = append(errs, fmt.Errorf("GC left the stale attachment's state:\n  %s", strings.Join(left, "\n  ")))
	}
	if left := rulesLeft(run, w.lost.ContainerID, w.lostIP); len(left) > 0 {
		errs = append(errs, fmt.Errorf("GC left the stale attachment's rules:\n  %s", strings.Join(left, "\n  ")))
	}
	if kept := stateFiles(plugin[:1], w.keep.ContainerID, w.keepIP); len(kept) == 0 {
		errs = append(errs, fmt.Errorf("GC removed the lease of the valid attachment %s", w.keep.ContainerID))
	}
	if err := w.rt.CheckNetworkList(ctx, w.list, w.keep); err != nil {
		errs = append(errs, fmt.Errorf("CHECK of the valid attachment after GC: %w", err))
	}
	return errors.Join(errs...)
}

func (w *libcniWorld) del(ctx context.Context) error {
	return errors.Join(w.rt.DelNetworkList(ctx, w.list, w.keep), w.lostRT.DelNetworkList(ctx, w.list, w.lost))
}

// requireClean fails the test with whatever an attachment left after DEL.
func (w *libcniWorld) requireClean(t *testing.T, containerID, ip string) {
	t.Helper()
	run := nsRunner(w.node)
	left := append(vethLeft(run), stateFiles(w.dirs, containerID, ip)...)
	left = append(left, rulesLeft(run, containerID, ip)...)
	if len(left) > 0 {
		t.Errorf("after DEL of %s (%s), the node still holds:\n  %s", containerID, ip, strings.Join(left, "\n  "))
	}
}

// nsRunner runs commands in the network namespace at path.
func nsRunner(path string) runner {
	return func(timeout time.Duration, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		full := append([]string{"--net=" + path, "--", name}, args...)
		out, err := exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
}
