package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/ns"
	"cnisuite/test/fuzz/mutate"
	"cnisuite/test/fuzz/protocol"
	"cnisuite/test/sandbox"
)

// processTimeout bounds every plugin process; the longest legitimate wait
// in the suite is bridge's 5 s duplicate address detection.
const processTimeout = 20 * time.Second

// world is one batch's node: a fresh network namespace that plays the
// node (the plugins run inside it), a container namespace, and a temporary
// directory. Nothing of it touches the sandbox's own namespace.
type world struct {
	t      testing.TB
	plugin string
	bin    string
	node   *ns.NetNS
	ctr    *ns.NetNS
	dir    string
	batch  int // the first input index of the batch
}

// newWorld makes a batch's namespaces; for tuning and portmap it adds the
// veth pair their prevResult describes.
func newWorld(t testing.TB, plugin string) *world {
	t.Helper()
	w := &world{t: t, plugin: plugin, bin: sandbox.Bin(t), dir: t.TempDir()}
	if !mutate.UnderSafeRoot(w.dir) {
		t.Fatalf("temporary directory %s is not under %v, where the sandbox mounts tmpfs: set TMPDIR", w.dir, mutate.SafeRoots)
	}
	w.node, w.ctr = sandbox.NewNS(t), sandbox.NewNS(t)
	if err := w.node.Do(func() error { return setUp("lo") }); err != nil {
		t.Fatalf("node lo up: %v", err)
	}
	if plugin == "tuning" || plugin == "portmap" {
		if err := w.makeVeth(); err != nil {
			t.Fatalf("container veth: %v", err)
		}
	}
	return w
}

func setUp(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(l)
}

// makeVeth makes fzh0 in the node and eth0 in the container with the
// addresses and MACs of the bases' prevResult.
// Equivalent to: ip link add fzh0 address … type veth peer eth0 address … netns ctr
func (w *world) makeVeth() error {
	nodeMAC, _ := net.ParseMAC(NodeMAC)
	ctrMAC, _ := net.ParseMAC(ContainerMAC)
	err := w.node.Do(func() error {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: NodeIfName, HardwareAddr: nodeMAC},
			PeerName: "eth0", PeerHardwareAddr: ctrMAC, PeerNamespace: netlink.NsFd(int(w.ctr.Fd()))}
		if err := netlink.LinkAdd(v); err != nil {
			return err
		}
		return addrsUp(NodeIfName, NodeAddr4, NodeAddr6)
	})
	if err != nil {
		return err
	}
	return w.ctr.Do(func() error { return addrsUp("eth0", CtrAddr4, CtrAddr6) })
}

// addrsUp adds addresses (without duplicate address detection) to a link
// and sets it up.
func addrsUp(name string, cidrs ...string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	for _, c := range cidrs {
		a, err := netlink.ParseAddr(c)
		if err != nil {
			return err
		}
		a.Flags = unix.IFA_F_NODAD
		if err := netlink.AddrAdd(l, a); err != nil {
			return fmt.Errorf("%s on %s: %w", c, name, err)
		}
	}
	return netlink.LinkSetUp(l)
}

// paths makes the directory of input index and returns where its
// configuration points.
func (w *world) paths(index int) (Paths, string, error) {
	dir := filepath.Join(w.dir, fmt.Sprintf("in-%d", index))
	if err := os.MkdirAll(filepath.Join(dir, "cwd"), 0o755); err != nil {
		return Paths{}, "", err
	}
	resolv := filepath.Join(dir, "resolv.conf")
	conf := "nameserver 10.0.0.53\ndomain fz.local\nsearch fz.local a.fz.local\noptions ndots:3\n"
	if err := os.WriteFile(resolv, []byte(conf), 0o644); err != nil {
		return Paths{}, "", err
	}
	return Paths{DataDir: filepath.Join(dir, "data"), ResolvConf: resolv, NetNS: w.ctr.Path(),
		Root: filepath.Join(dir, "damaged") + "/"}, dir, nil
}

// exec runs verb of the plugin in the node namespace, as a runtime would:
// environment, configuration on stdin, result on stdout. The process and
// everything it starts form one process group, killed on timeout.
func (w *world) exec(in Input, dir, verb string, stdin []byte) protocol.Outcome {
	o := protocol.Outcome{Verb: verb}
	err := w.node.Do(func() error {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(w.bin, in.Plugin))
		cmd.Env = append(cleanEnv(in.Env.Vars(verb)), "CNI_PATH="+w.bin, "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
		cmd.Dir = filepath.Join(dir, "cwd")
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.WaitDelay = 5 * time.Second
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { o.Took = time.Since(start) }()
		pid := cmd.Process.Pid
		var timedOut atomic.Bool
		timer := time.AfterFunc(processTimeout, func() {
			timedOut.Store(true)
			_ = syscall.Kill(-pid, syscall.SIGKILL) // our own child's group; it may be gone already
		})
		err := cmd.Wait()
		timer.Stop()
		o.TimedOut = timedOut.Load()
		o.Stdout, o.Stderr = stdout.Bytes(), stderr.Bytes()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			o.Exit = exit.ExitCode()
			return nil
		}
		return err
	})
	o.StartErr = err
	return o
}

// cleanEnv drops NUL bytes, which no environment can hold.
func cleanEnv(vars []string) []string {
	for i, v := range vars {
		vars[i] = strings.ReplaceAll(v, "\x00", "")
	}
	return vars
}
