package fuzz

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"cnisuite/test/fuzz/jsontree"
	"cnisuite/test/sandbox"
)

// The teardown rule: whatever ADD failed on, the DEL that follows succeeds
// once nothing of the attachment is left, and leaves the node as it was.
// Each case provokes one ADD failure on a base configuration (as users
// write it), then runs every verb as the fuzzer does (runInput) and
// requires: ADD failed with the code the failure calls for, DEL exited 0,
// nothing was left (links, addresses, sysctls, rules, state files).

// teardownCase is one provoked ADD failure.
type teardownCase struct {
	name   string
	plugin string
	base   string
	code   int                                          // ADD's CNI error code
	edit   func(o *jsontree.Object, p Paths)            // the configuration's fault
	env    func(e *Env)                                 // the environment's fault
	node   func(t *testing.T, w *world, p Paths) func() // the node's fault; returns its undo
}

var teardownCases = []teardownCase{
	{name: "bridge name too long", plugin: "bridge", base: "l3-default", code: 7,
		edit: func(o *jsontree.Object, _ Paths) { o.Set("bridge", "fz-name-too-long-for-linux") }},
	{name: "ipam type is bridge itself", plugin: "bridge", base: "l3-default", code: 7,
		edit: func(o *jsontree.Object, _ Paths) { setIPAM(o, "type", "bridge") }},
	{name: "ipam plugin missing", plugin: "bridge", base: "l3-default", code: 7,
		edit: func(o *jsontree.Object, _ Paths) { setIPAM(o, "type", "fz-no-such-ipam") }},
	{name: "netns of another kind", plugin: "bridge", base: "l3-default", code: 4,
		env: func(e *Env) { e.NetNS = "/proc/self/ns/pid" }},
	{name: "dataDir full", plugin: "bridge", base: "l3-default", code: 5, node: fullDataDir},
	{name: "dataDir read-only", plugin: "bridge", base: "l3-default", code: 5, node: readOnlyDataDir},
	{name: "index link planted", plugin: "bridge", base: "l3-default", code: 5, node: plantedIndexLink},
	{name: "unknown sysctl", plugin: "tuning", base: "all-keys", code: 7,
		edit: func(o *jsontree.Object, _ Paths) {
			o.Set("sysctl", jsontree.Obj("net.ipv4.conf.IFNAME.fz_no_such_key", "1"))
		}},
	{name: "tuning dataDir read-only", plugin: "tuning", base: "all-keys", code: 5, node: readOnlyDataDir},
	{name: "unknown protocol", plugin: "portmap", base: "default", code: 7,
		edit: func(o *jsontree.Object, _ Paths) {
			o.Set("runtimeConfig", jsontree.Obj("portMappings", jsontree.Arr(jsontree.Obj("hostPort", 8080, "containerPort", 80, "protocol", "icmp"))))
		}},
}

// caseName names the subtest of a case of plugin.
func caseName(plugin, name string) string { return plugin + "/" + strings.ReplaceAll(name, " ", "_") }

// caseWorld is a world for plugin and the paths of its case index.
func caseWorld(t *testing.T, plugin string, index int) (*world, Paths, string) {
	t.Helper()
	w := newWorld(t, plugin)
	p, dir, err := w.paths(index)
	if err != nil {
		t.Fatal(err)
	}
	return w, p, dir
}

func TestTeardownAfterFailedAdd(t *testing.T) {
	sandbox.Require(t)
	for i, tc := range teardownCases {
		t.Run(caseName(tc.plugin, tc.name), func(t *testing.T) {
			w, p, dir := caseWorld(t, tc.plugin, i)
			in := tc.input(t, p, i)
			if tc.node != nil {
				defer tc.node(t, w, p)()
			}
			res := w.runInput(in, dir)
			add, del := res.outcomes[0], res.outcomes[len(res.outcomes)-1]
			if code := errorCode(add.Stdout); add.Exit == 0 || code != tc.code {
				t.Errorf("ADD = exit %d, code %d (%s); want code %d", add.Exit, code, add.Stdout, tc.code)
			}
			if del.Exit != 0 {
				t.Errorf("DEL after the failed ADD = exit %d: %s %s", del.Exit, del.Stdout, del.Stderr)
			}
			for _, p := range res.problems {
				if (strings.HasPrefix(p, "leftover") || strings.HasPrefix(p, "DEL")) && !strings.HasSuffix(p, "/"+fillerName) {
					t.Error(p)
				}
			}
		})
	}
}

func (tc teardownCase) input(t *testing.T, p Paths, i int) Input {
	t.Helper()
	var tree any
	for _, b := range Bases[tc.plugin] {
		if b.Name == tc.base {
			tree = b.Tree(p)
		}
	}
	o, ok := tree.(*jsontree.Object)
	if !ok {
		t.Fatalf("no base %s of %s", tc.base, tc.plugin)
	}
	if tc.edit != nil {
		tc.edit(o, p)
	}
	env := Env{ContainerID: fmt.Sprintf("teardown-%d", i), NetNS: p.NetNS, IfName: "eth0"}
	if tc.env != nil {
		tc.env(&env)
	}
	return Input{Plugin: tc.plugin, Index: i, Base: tc.base, Config: jsontree.Marshal(o), Env: env}
}

func setIPAM(o *jsontree.Object, key string, v any) {
	ipam, _ := o.Get("ipam")
	if i, ok := ipam.(*jsontree.Object); ok {
		i.Set(key, v)
	}
}

// errorCode is the code of an error object, 0 for anything else.
func errorCode(stdout []byte) int {
	var e struct {
		Code int `json:"code"`
	}
	if json.Unmarshal(stdout, &e) != nil {
		return 0
	}
	return e.Code
}

// fullDataDir puts the dataDir on a 64 KiB tmpfs filled to the last block
// (the sandbox's mount namespace is private: the node never sees it).
func fullDataDir(t *testing.T, _ *world, p Paths) func() {
	t.Helper()
	mountOver(t, p.DataDir, "size=64k")
	f, err := os.Create(filepath.Join(p.DataDir, fillerName))
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 4096)
	for i := 0; i < 64; i++ {
		if _, err := f.Write(block); err != nil {
			break
		}
	}
	f.Close()
	return func() { unmount(t, p.DataDir) }
}

// readOnlyDataDir makes the dataDir an empty read-only tmpfs.
func readOnlyDataDir(t *testing.T, _ *world, p Paths) func() {
	t.Helper()
	mountOver(t, p.DataDir, "size=64k")
	if err := unix.Mount("", p.DataDir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", p.DataDir, err)
	}
	return func() { unmount(t, p.DataDir) }
}

// plantedIndexLink plants .host-local-index2 as a link to a directory
// outside the dataDir holding a directory named like the network; it must
// be there, whole, after the input.
func plantedIndexLink(t *testing.T, w *world, p Paths) func() {
	t.Helper()
	victim := filepath.Join(w.dir, "victim")
	if err := os.MkdirAll(filepath.Join(victim, "fznet"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(victim, "fznet", "data")
	if err := os.WriteFile(data, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(p.DataDir, ".host-local-index2")); err != nil {
		t.Fatal(err)
	}
	return func() {
		if b, err := os.ReadFile(data); err != nil || string(b) != "keep" {
			t.Errorf("the planted link's target lost its file: %q, %v", b, err)
		}
	}
}

// fillerName is the file that fills the dataDir: the test's, not a leftover.
const fillerName = "filler"

func mountOver(t *testing.T, dir, opts string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
}

func unmount(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		t.Errorf("unmount %s: %v", dir, err)
	}
}
