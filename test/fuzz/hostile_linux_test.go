package fuzz

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"cnisuite/test/fuzz/jsontree"
	"cnisuite/test/fuzz/protocol"
	"cnisuite/test/sandbox"
)

// The hostile file system: links, foreign owners, mode 000 files and
// shared directories planted in every state path a plugin writes (host-
// local's dataDir through bridge, tuning's dataDir, the per-call log).
// Every verb runs as the fuzzer runs them; whatever the plugin answers, the
// planted link's target is left as it was, a foreign file is not touched,
// a shared directory keeps its mode, and an error names what it refused.
// (Full and read-only file systems are the teardown family's.)

// hostileCase plants one thing before the input runs.
type hostileCase struct {
	name   string
	plugin string
	base   string
	// plant makes the hostile entry and returns the path it planted, for
	// the errors to name ("" when no error need name it).
	plant func(t *testing.T, p Paths, victim string) string
	edit  func(o *jsontree.Object, p Paths)
}

// The first address host-local leases in the bridge base, and the next.
const firstLease, secondLease = "10.20.0.10", "10.20.0.11"

var hostileCases = []hostileCase{
	{name: "boot record directory is a link", plugin: "bridge", base: "l3-default",
		plant: linkAt(".host-local-boot", "")},
	{name: "boot record is a link", plugin: "bridge", base: "l3-default",
		plant: linkAt(".host-local-boot/fznet", "data")},
	{name: "index directory is a link", plugin: "bridge", base: "l3-default",
		plant: linkAt(".host-local-index2", "")},
	{name: "network directory is a link", plugin: "bridge", base: "l3-default",
		plant: linkAt("fznet", "")},
	{name: "lock file is a link", plugin: "bridge", base: "l3-default",
		plant: linkAt("fznet/lock", "data")},
	{name: "last reserved is a link", plugin: "bridge", base: "l3-default",
		plant: linkAt("fznet/last_reserved_ip.0", "data")},
	{name: "lease name is a link", plugin: "bridge", base: "l3-default",
		plant: linkAt("fznet/"+firstLease, "data")},
	{name: "foreign lease, mode 000", plugin: "bridge", base: "l3-default", plant: foreignLease},
	{name: "tuning state file is a link", plugin: "tuning", base: "all-keys",
		plant: linkAt("teardown-state_eth0.json", "data")},
	{name: "tuning dataDir shared 1777", plugin: "tuning", base: "all-keys", plant: sharedDir},
	{name: "iptables jump records are a link", plugin: "bridge", base: "l3-default", plant: plantedJumpRecords},
	{name: "logFile is a link", plugin: "bridge", base: "l3-default",
		plant: func(t *testing.T, p Paths, victim string) string {
			return linkAt("cni.log", "data")(t, p, victim)
		},
		edit: func(o *jsontree.Object, p Paths) { o.Set("logFile", filepath.Join(p.DataDir, "cni.log")) }},
}

func TestHostileStateDirs(t *testing.T) {
	sandbox.Require(t)
	for i, hc := range hostileCases {
		t.Run(caseName(hc.plugin, hc.name), func(t *testing.T) {
			w, p, dir := caseWorld(t, hc.plugin, i)
			tc := teardownCase{plugin: hc.plugin, base: hc.base, edit: hc.edit}
			in := tc.input(t, p, i)
			in.Env.ContainerID = "teardown-state"
			victim := newVictimDir(t, w.dir)
			planted := hc.plant(t, p, victim)
			before := snapshotTree(t, victim)
			res := w.runInput(in, dir)
			if after := snapshotTree(t, victim); after != before {
				t.Errorf("the planted entry's target changed:\nbefore %s\nafter  %s", before, after)
			}
			// ADD and DEL either succeed or name what they refused (CHECK
			// after a refused ADD fails for want of the attachment).
			for _, o := range []protocol.Outcome{res.outcomes[0], res.outcomes[len(res.outcomes)-1]} {
				if o.Exit != 0 && (planted == "" || !bytes.Contains(o.Stdout, []byte(planted))) {
					t.Errorf("%s failed without naming %q: %s", o.Verb, planted, o.Stdout)
				}
				t.Logf("%s: exit %d %s", o.Verb, o.Exit, bytes.TrimSpace(o.Stdout))
			}
		})
	}
}

// newVictimDir makes, outside the input's directory, a shared (1777)
// directory with a file and a directory named like the network.
func newVictimDir(t *testing.T, root string) string {
	t.Helper()
	v := filepath.Join(root, "victim")
	if err := os.MkdirAll(filepath.Join(v, "fznet"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"data", "fznet/data"} {
		if err := os.WriteFile(filepath.Join(v, f), []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(v, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return v
}

// snapshotTree describes every entry below root: path, mode, owner, content.
func snapshotTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		fmt.Fprintf(&b, "%s %v uid %d", p, fi.Mode(), st.Uid)
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("; ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// linkAt plants, at rel under the dataDir, a link to victim/to.
func linkAt(rel, to string) func(t *testing.T, p Paths, victim string) string {
	return func(t *testing.T, p Paths, victim string) string {
		t.Helper()
		path := filepath.Join(p.DataDir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(victim, to), path); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// foreignLease leases the second address to another container in a file
// of mode 000 owned by another user; it must stay exactly so. The victim
// directory is where the test keeps a copy to compare.
func foreignLease(t *testing.T, p Paths, victim string) string {
	t.Helper()
	dir := filepath.Join(p.DataDir, "fznet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lease := filepath.Join(dir, secondLease)
	if err := os.WriteFile(lease, []byte("other-container\r\neth0"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := errorsJoin(os.Chown(lease, 4242, 4242), os.Chmod(lease, 0)); err != nil {
		t.Fatal(err)
	}
	// The lease itself is checked by moving it under the victim's watch:
	// a hard link in the victim directory shares its inode.
	if err := os.Link(lease, filepath.Join(victim, "foreign-lease")); err != nil {
		t.Fatal(err)
	}
	return ""
}

// sharedDir makes the dataDir a shared 1777 directory: the victim itself.
func sharedDir(t *testing.T, p Paths, victim string) string {
	t.Helper()
	if err := os.Symlink(victim, p.DataDir); err != nil {
		t.Fatal(err)
	}
	return ""
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// plantedJumpRecords makes /run/cnisuite/iptables-jumps (the iptables-nft
// backend's records of its jumps, shared by every network) a link to the
// victim: the records are then not kept (DEL finds the jumps by a dump),
// never written through.
func plantedJumpRecords(t *testing.T, _ Paths, victim string) string {
	t.Helper()
	const records = "/run/cnisuite/iptables-jumps"
	if err := os.RemoveAll(records); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(records), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, records); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(records) })
	return ""
}
