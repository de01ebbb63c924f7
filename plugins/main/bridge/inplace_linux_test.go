package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/invoke"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/plugins/ipam/host-local/hostlocal"
	"cnisuite/test/sandbox"
	"cnisuite/test/userns"
)

// The tests that program the network run as root inside scripts/sandbox.sh
// (the tests that start the built plugins need it) or, for anyone, as root
// of a user namespace of their own (test/userns), where the tests calling
// the plugin's commands in this process run without root.
func TestMain(m *testing.M) { userns.MainOrSandbox(m) }

// inplace calls the plugin's commands in this process, as skel would for
// the runtime, with host-local (as the build made with bridge) running in
// this process too.
type inplace struct {
	t       *testing.T
	p       *plugin
	conf    map[string]any
	cniPath string
	stderr  bytes.Buffer
}

// newInplace prepares calls with the network configuration conf (one
// plugin object, JSON); the bridge it names is removed when the test ends.
func newInplace(t *testing.T, conf string) *inplace {
	t.Helper()
	userns.RequireNode(t)
	in := &inplace{t: t, p: &plugin{newRules: firewall.New, portTimeout: portTimeout}, cniPath: hostLocalHere(t)}
	if err := json.Unmarshal([]byte(conf), &in.conf); err != nil {
		t.Fatalf("test configuration %s: %v", conf, err)
	}
	if br, _ := in.conf["bridge"].(string); br != "" {
		sandbox.RemoveLinkAtEnd(t, br)
	}
	return in
}

// hostLocalHere returns a CNI_PATH whose host-local is this test binary,
// and registers host-local to run in this process for that binary, as
// bridge's main does for the host-local built with it.
func hostLocalHere(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	id, err := goBuildID(exe)
	if err != nil {
		t.Fatalf("build ID of %s: %v", exe, err)
	}
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, "host-local")); err != nil {
		t.Fatal(err)
	}
	invoke.InProcess("host-local", id, hostlocal.Plugin())
	return dir
}

// goBuildID reads the Go build ID note of the executable at path.
func goBuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", fmt.Errorf("no .note.go.buildid section")
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		return "", fmt.Errorf("reading the note: %v", err)
	}
	descsz := binary.LittleEndian.Uint32(b[4:])
	if 16+int(descsz) > len(b) {
		return "", fmt.Errorf("short note")
	}
	return string(b[16 : 16+descsz]), nil
}

// args are the arguments of one call for container id in n (nil: none),
// with the configuration and, when prev is set, prevResult in it.
func (in *inplace) args(command, id string, n *ns.NetNS, prev *types.Result) *skel.CmdArgs {
	in.t.Helper()
	conf := map[string]any{}
	for k, v := range in.conf {
		conf[k] = v
	}
	if prev != nil {
		enc, err := prev.Encode(conf["cniVersion"].(string))
		if err != nil {
			in.t.Fatal(err)
		}
		conf["prevResult"] = json.RawMessage(enc)
	}
	data, err := json.Marshal(conf)
	if err != nil {
		in.t.Fatal(err)
	}
	netns := ""
	if n != nil {
		netns = n.Path()
	}
	env := []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + id, "CNI_NETNS=" + netns,
		"CNI_IFNAME=eth0", "CNI_PATH=" + in.cniPath, "PATH=" + os.Getenv("PATH")}
	return &skel.CmdArgs{Command: command, ContainerID: id, Netns: netns, IfName: "eth0",
		Path: in.cniPath, StdinData: data, Env: env, Stderr: &in.stderr}
}

func (in *inplace) add(id string, n *ns.NetNS) (*types.Result, error) {
	return in.p.cmdAdd(context.Background(), in.args("ADD", id, n, nil))
}

// mustAdd attaches n as container id, and detaches it when the test ends.
func (in *inplace) mustAdd(id string, n *ns.NetNS) *types.Result {
	in.t.Helper()
	res, err := in.add(id, n)
	if err != nil {
		in.t.Fatalf("ADD %s: %v (stderr: %s)", id, err, in.stderr.String())
	}
	in.t.Cleanup(func() { _ = in.del(id, n, res) })
	return res
}

func (in *inplace) check(id string, n *ns.NetNS, prev *types.Result) error {
	return in.p.cmdCheck(context.Background(), in.args("CHECK", id, n, prev))
}

func (in *inplace) del(id string, n *ns.NetNS, prev *types.Result) error {
	return in.p.cmdDel(context.Background(), in.args("DEL", id, n, prev))
}

// cniCode is the CNI error code the runtime would read for err, 0 for none.
func cniCode(err error) uint {
	if err == nil {
		return 0
	}
	return types.Code(err)
}

// inNS returns what fn returns, run inside n.
func inNS[T any](t *testing.T, n *ns.NetNS, fn func() (T, error)) T {
	t.Helper()
	var v T
	if err := n.Do(func() (err error) { v, err = fn(); return err }); err != nil {
		t.Fatal(err)
	}
	return v
}

// ctrLink is the container's eth0 as the container sees it, with its
// global addresses and its routes.
type ctrLink struct {
	mtu    int
	up     bool
	addrs  []string
	routes []string
	mac    string
}

func containerSide(t *testing.T, n *ns.NetNS) (ctrLink, bool) {
	t.Helper()
	type seen struct {
		l  ctrLink
		ok bool
	}
	s := inNS(t, n, func() (seen, error) {
		l, err := netlink.LinkByName("eth0")
		if _, missing := err.(netlink.LinkNotFoundError); missing {
			return seen{}, nil
		}
		if err != nil {
			return seen{}, err
		}
		c := ctrLink{mtu: l.Attrs().MTU, up: l.Attrs().Flags&1 != 0, mac: l.Attrs().HardwareAddr.String()}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return seen{}, err
		}
		for _, a := range addrs {
			if a.IP.IsGlobalUnicast() {
				c.addrs = append(c.addrs, a.IPNet.String())
			}
		}
		routes, err := netlink.RouteList(l, netlink.FAMILY_ALL)
		if err != nil {
			return seen{}, err
		}
		for _, r := range routes {
			if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && r.Gw != nil {
				c.routes = append(c.routes, "default via "+r.Gw.String())
			}
		}
		return seen{c, true}, nil
	})
	return s.l, s.ok
}

// procSys reads a /proc/sys file of the test's namespace.
func procSys(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc/sys", path))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
