// Package execs checks which programs a full chain starts: on a node whose
// iptables is iptables-nft, and on nftables, a bridge or portmap call
// without user conditions writes its rules over netlink and starts no nft,
// iptables, iptables-restore or iptables-save process (issue 28).
package execs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"

	"cnisuite/test/sandbox"
)

// tracedExec runs each plugin under strace and collects the programs it
// and its children executed.
type tracedExec struct {
	invoke.RawExec
	version.PluginDecoder
	dir string
	mu  sync.Mutex
	n   int
	ran []string // base names, one per execve
}

var execve = regexp.MustCompile(`execve\("([^"]+)"`)

// ExecPlugin runs the plugin as strace -f -qq -e trace=execve -o <file> <plugin>.
func (e *tracedExec) ExecPlugin(ctx context.Context, path string, stdin []byte, env []string) ([]byte, error) {
	e.mu.Lock()
	e.n++
	trace := filepath.Join(e.dir, fmt.Sprintf("trace.%d", e.n))
	e.mu.Unlock()
	cmd := exec.CommandContext(ctx, "strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", trace, path)
	cmd.Env, cmd.Stdin = env, bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	data, err := os.ReadFile(trace)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	for _, m := range execve.FindAllStringSubmatch(string(data), -1) {
		e.ran = append(e.ran, filepath.Base(m[1]))
	}
	e.mu.Unlock()
	if runErr != nil {
		return out.Bytes(), fmt.Errorf("%s: %v: %s%s", filepath.Base(path), runErr, out.String(), errOut.String())
	}
	return out.Bytes(), nil
}

func (e *tracedExec) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ran := e.ran
	e.ran = nil
	sort.Strings(ran)
	return ran
}

// firewallTool reports whether a program is one of the firewall tools a
// call must not start here.
func firewallTool(name string) bool {
	return name == "nft" || strings.HasPrefix(name, "iptables") || strings.HasPrefix(name, "ip6tables") ||
		strings.HasPrefix(name, "xtables")
}

func TestNoFirewallProcess(t *testing.T) {
	sandbox.Require(t)
	if _, err := exec.LookPath("strace"); err != nil {
		t.Fatalf("strace (scripts/install-deps.sh installs it): %v", err)
	}
	bin := sandbox.Bin(t)
	for i, backend := range []string{"", "nftables", "iptables"} {
		name := backend
		if name == "" {
			name = "no_backend_key"
		}
		t.Run(name, func(t *testing.T) { runChain(t, bin, backend, i) })
	}
}

// runChain drives bridge (ipMasq, macspoofchk) + host-local → tuning →
// portmap through ADD, CHECK, DEL and GC of one pod with a host port.
func runChain(t *testing.T, bin, backend string, i int) {
	bkey, pkey := "", ""
	if backend != "" {
		bkey, pkey = fmt.Sprintf(`"ipMasqBackend":%q,`, backend), fmt.Sprintf(`"backend":%q,`, backend)
	}
	br := fmt.Sprintf("exbr%d", i)
	sandbox.RemoveLinkAtEnd(t, br)
	list := sandbox.ConfList(t, fmt.Sprintf(`{"cniVersion":"1.1.0","name":"execs%d","plugins":[
	  {"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":true,"macspoofchk":true,%s
	   "ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.%d.0.0/24"}]]}},
	  {"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}},
	  {"type":"portmap",%s"capabilities":{"portMappings":true}}]}`, i, br, bkey, t.TempDir(), 140+i, pkey))
	tr := &tracedExec{dir: t.TempDir()}
	rt := libcni.NewCNIConfigWithCacheDir([]string{bin}, t.TempDir(), tr)
	pod := sandbox.NewNS(t)
	rc := &libcni.RuntimeConf{ContainerID: fmt.Sprintf("execs-%d", i), IfName: "eth0", NetNS: pod.Path(),
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{{"hostPort": 18100 + i, "containerPort": 80, "protocol": "tcp"}}}}
	ctx := context.Background()
	steps := []struct {
		verb string
		run  func() error
	}{
		{"ADD", func() error { _, err := rt.AddNetworkList(ctx, list, rc); return err }},
		{"CHECK", func() error { return rt.CheckNetworkList(ctx, list, rc) }},
		{"DEL", func() error { return rt.DelNetworkList(ctx, list, rc) }},
		{"GC", func() error { return rt.GCNetworkList(ctx, list, &libcni.GCArgs{}) }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.verb, err)
		}
		ran := tr.take()
		if s.verb != "GC" && !(slices.Contains(ran, "bridge") && slices.Contains(ran, "tuning") && slices.Contains(ran, "portmap")) {
			t.Errorf("%s: the trace shows %v, not the three plugins: it saw nothing", s.verb, ran)
		}
		for _, p := range ran {
			if firewallTool(p) {
				t.Errorf("%s started %s (every program: %v)", s.verb, p, ran)
			}
		}
	}
}
