package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"cnisuite/pkg/ns"
	"cnisuite/test/sandbox"
)

// interopList is the chain both suites run, with every key the switch must
// carry over: masquerade and port mappings on the given backend, a tuning
// sysctl, host-local leases in dataDir.
const interopList = `{
  "cniVersion": "1.0.0",
  "name": %[1]q,
  "plugins": [
    {"type": "bridge", "bridge": %[2]q, "isGateway": true, "ipMasq": true, "hairpinMode": true, "ipMasqBackend": %[3]q,
     "ipam": {"type": "host-local", "dataDir": %[4]q, "ranges": [[{"subnet": %[5]q}]]}},
    {"type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1"}},
    {"type": "portmap", "backend": %[3]q, "snat": true, "capabilities": {"portMappings": true}}
  ]
}`

// interop is a node on which pods are attached by one suite and detached
// by the other, as after an upgrade or a rollback with pods running.
type interop struct {
	t                     *testing.T
	node                  *ns.NetNS
	ours, reference       string // plugin directories
	confDir, cacheDir     string
	dataDir               string
	list                  *libcni.NetworkConfigList
	gateway               net.IP
	withOurs, withTheRefs *libcni.CNIConfig // one runtime, its binaries switched
}

// newInterop makes the node; backend "" leaves both backend keys out.
func newInterop(t *testing.T, backend string, index int) *interop {
	sandbox.Require(t)
	w := &interop{t: t, node: sandbox.NewNS(t), ours: pluginDir(t), reference: sandbox.ReferencePlugins(t, ""),
		confDir: t.TempDir(), cacheDir: t.TempDir(), dataDir: t.TempDir(),
		gateway: net.IPv4(10, 78, byte(index), 1)}
	name := "interop-" + backend
	if backend == "" {
		name = "interop-nokeys"
	}
	conf := fmt.Sprintf(interopList, name, fmt.Sprintf("cniint%d", index), backend, w.dataDir,
		fmt.Sprintf("10.78.%d.0/24", index))
	if backend == "" { // no backend keys, as users write them
		conf = strings.NewReplacer(`"ipMasqBackend": "",`, "", `"backend": "",`, "").Replace(conf)
	}
	if err := os.WriteFile(filepath.Join(w.confDir, "10-interop.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	w.list = sandbox.ConfList(t, conf)
	w.withOurs = libcni.NewCNIConfigWithCacheDir([]string{w.ours}, w.cacheDir, nil)
	w.withTheRefs = libcni.NewCNIConfigWithCacheDir([]string{w.reference}, w.cacheDir, nil)
	return w
}

// pod is one attachment with a TCP server answering its name on port.
type pod struct {
	rc *libcni.RuntimeConf
	ip string
}

// attach adds a pod through rt, with hostPort → port, serving on port.
func (w *interop) attach(rt *libcni.CNIConfig, name string, hostPort, port int, args ...[2]string) *pod {
	w.t.Helper()
	ctr := sandbox.NewNS(w.t)
	p := &pod{rc: &libcni.RuntimeConf{ContainerID: uniqueName(name), NetNS: ctr.Path(), IfName: "eth0", Args: args,
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{{"hostPort": hostPort, "containerPort": port, "protocol": "tcp"}}}}}
	var res *types100.Result
	w.inNode(func() error {
		r, err := rt.AddNetworkList(context.Background(), w.list, p.rc)
		if err == nil {
			res, err = types100.NewResultFromResult(r)
		}
		return err
	})
	if len(res.IPs) == 0 {
		w.t.Fatalf("ADD %s: no address", name)
	}
	p.ip = res.IPs[0].Address.IP.String()
	sandbox.Serve(w.t, ctr, "tcp", fmt.Sprintf(":%d", port), func(net.Conn) string { return name })
	return p
}

func (w *interop) detach(rt *libcni.CNIConfig, p *pod) {
	w.t.Helper()
	w.inNode(func() error { return rt.DelNetworkList(context.Background(), w.list, p.rc) })
}

// inNode runs fn in the node's namespace and fails the test on its error.
func (w *interop) inNode(fn func() error) {
	w.t.Helper()
	var err error
	if nsErr := w.node.Do(func() error { err = fn(); return nil }); nsErr != nil {
		w.t.Fatal(nsErr)
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

// fetch connects from the node to the gateway's hostPort and returns what
// answers there.
func (w *interop) fetch(hostPort int) string {
	var got string
	_ = w.node.Do(func() error {
		got = dialName(net.JoinHostPort(w.gateway.String(), fmt.Sprint(hostPort)))
		return nil
	})
	return got
}

// leftovers lists the state files and rules naming p, and whether p's
// lease and rules are gone; the result cache is the runtime's, not ours.
func (w *interop) leftovers(p *pod) []string {
	found := stateFiles([]string{"/var/lib/cni", "/run/cni", w.dataDir}, p.rc.ContainerID, p.ip)
	return append(found, rulesLeft(nsRunner(w.node.Path()), p.rc.ContainerID, p.ip)...)
}

// dialName reads what answers at addr, or the error, within 3 s.
func dialName(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return "error: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second)) // a failure shows as a short read below
	buf := make([]byte, 64)
	n, _ := c.Read(buf) // what was read before an error or EOF is the answer
	return strings.TrimSpace(string(buf[:n]))
}
