package sysctlkeep

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnisuite/test/sandbox"
)

func testKeeper(t *testing.T) (Keeper, string) {
	k := Keeper{SysctlDir: filepath.Join(t.TempDir(), "sysctl.d"), HoldsDir: filepath.Join(t.TempDir(), "holds")}
	return k, filepath.Join(k.SysctlDir, FileName)
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			keys = append(keys, l)
		}
	}
	return strings.Join(keys, "; ")
}

// A key stays in the file while any holder holds it; the file goes with
// the last key.
func TestHoldRelease(t *testing.T) {
	k, file := testKeeper(t)
	a, b := Holder("bridge", "n", "c1", "eth0"), Holder("bridge", "n", "c2", "eth0")
	steps := []struct {
		do   func() error
		want string
	}{
		{func() error { return k.Hold("net/ipv4/ip_forward", "1", a) }, "net/ipv4/ip_forward = 1"},
		{func() error { return k.Hold("net/ipv4/ip_forward", "1", b) }, "net/ipv4/ip_forward = 1"},
		{func() error { return k.Hold("net/ipv4/conf/eth0.100/route_localnet", "1", b) },
			"net/ipv4/conf/eth0.100/route_localnet = 1; net/ipv4/ip_forward = 1"},
		{func() error { return k.Release(a) }, "net/ipv4/conf/eth0.100/route_localnet = 1; net/ipv4/ip_forward = 1"},
		{func() error { return k.Release(a) }, "net/ipv4/conf/eth0.100/route_localnet = 1; net/ipv4/ip_forward = 1"},
		{func() error { return k.Release(b) }, ""},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := fileText(t, file); got != s.want {
			t.Fatalf("after step %d the file holds %q, want %q", i, got, s.want)
		}
	}
	if entries, _ := os.ReadDir(k.HoldsDir); len(entries) != 1 || entries[0].Name() != ".lock" {
		t.Errorf("holds left: %v", entries)
	}
}

// sysctl --system, with only this test's files (and ours) to read, sets
// ip_forward back to 1 while a hold is there, though a file of the admin's
// says 0; after the release it no longer does. It runs in a private mount
// namespace of the sandbox's network namespace: the machine's own sysctl
// files are never read and its own keys never touched.
func TestSysctlSystemKeepsHeldKeys(t *testing.T) {
	sandbox.Require(t)
	k := Keeper{}
	h := Holder("bridge", "n", "c1", "eth0")
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := k.Hold("net/ipv4/ip_forward", "1", h); err != nil {
		t.Fatal(err)
	}
	if got := sysctlSystem(t); got != "1" {
		t.Errorf("ip_forward after sysctl --system with a hold = %s, want 1", got)
	}
	if err := k.Release(h); err != nil {
		t.Fatal(err)
	}
	if got := sysctlSystem(t); got != "0" {
		t.Errorf("ip_forward after sysctl --system without a hold = %s, want the admin's 0", got)
	}
}

// sysctlSystem runs sysctl --system where the only sysctl files are an
// admin's /etc/sysctl.d/99-admin.conf (ip_forward = 0) and /run/sysctl.d,
// and returns ip_forward afterwards.
func sysctlSystem(t *testing.T) string {
	t.Helper()
	script := `set -e
for d in /etc/sysctl.d /usr/lib/sysctl.d /usr/local/lib/sysctl.d /lib/sysctl.d; do
	if [ -d "$d" ]; then mount -t tmpfs tmpfs "$d"; fi
done
if [ -e /etc/sysctl.conf ]; then mount --bind /dev/null /etc/sysctl.conf; fi
echo 'net.ipv4.ip_forward = 0' > /etc/sysctl.d/99-admin.conf
sysctl --system >/dev/null
cat /proc/sys/net/ipv4/ip_forward`
	out, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("sysctl --system in a private mount namespace: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// Restore writes the file again after another program removed or edited
// it (Hold does not: the holder is there already), reports it in a dry run
// without writing, and changes nothing when the file is right.
func TestRestore(t *testing.T) {
	k, file := testKeeper(t)
	h := Holder("bridge", "n", "c1", "eth0")
	if err := k.Hold("net/ipv4/ip_forward", "1", h); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := k.Restore(false); err != nil || changed {
		t.Fatalf("Restore of an intact file: changed %v, %v", changed, err)
	}
	for _, damage := range []func() error{
		func() error { return os.Remove(file) },
		func() error { return os.WriteFile(file, []byte("net.ipv4.ip_forward = 0\n"), 0o644) },
		func() error { // a link planted in its place: replaced, not followed
			return errors.Join(os.Remove(file), os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), file))
		},
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		if err := k.Hold("net/ipv4/ip_forward", "1", h); err != nil {
			t.Fatal(err)
		}
		damaged, _ := os.ReadFile(file)
		if changed, err := k.Restore(true); err != nil || !changed {
			t.Errorf("dry-run Restore of a damaged file: changed %v, %v", changed, err)
		}
		if got, _ := os.ReadFile(file); string(got) != string(damaged) {
			t.Errorf("a dry run wrote the file: %q", got)
		}
		if changed, err := k.Restore(false); err != nil || !changed {
			t.Errorf("Restore of a damaged file: changed %v, %v", changed, err)
		}
		if got, err := os.ReadFile(file); err != nil || string(got) != string(want) {
			t.Errorf("after Restore the file holds %q, %v; want %q", got, err, want)
		}
		if st, err := os.Lstat(file); err != nil || !st.Mode().IsRegular() {
			t.Errorf("after Restore the file is %v, %v; want a regular file", st, err)
		}
	}
	if err := k.Release(h); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := k.Restore(false); err != nil || !changed || fileExists(file) {
		t.Errorf("Restore with no hold left: changed %v, %v; the file should go", changed, err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// A Release killed half-way (its hold removed, the file not rewritten
// yet; or, as an earlier release did it, its key directory removed, not
// yet the file's line) is finished by the next Release that drops a hold:
// the file stops listing a key nobody holds. Before, the key stayed in
// the file after later DELs, until a reboot.
func TestReleaseAfterKilledRelease(t *testing.T) {
	const fwd, lnet = "net/ipv4/ip_forward", "net/ipv4/conf/eth0/route_localnet"
	for _, tc := range []struct {
		name string
		kill func(t *testing.T, k Keeper, holder string) // what the killed Release did
	}{
		{"hold removed", func(t *testing.T, k Keeper, holder string) {
			if err := os.Remove(filepath.Join(k.HoldsDir, keyDir(fwd, "1"), holder)); err != nil {
				t.Fatal(err)
			}
		}},
		{"key directory emptied", func(t *testing.T, k Keeper, holder string) {
			if err := os.RemoveAll(filepath.Join(k.HoldsDir, keyDir(fwd, "1"))); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, file := testKeeper(t)
			killed, other, later := Holder("bridge", "n", "c1", "eth0"), Holder("portmap", "n", "c2", "eth0"), Holder("portmap", "n", "c3", "eth0")
			if err := errors.Join(k.Hold(fwd, "1", killed), k.Hold(lnet, "1", other), k.Hold(lnet, "1", later)); err != nil {
				t.Fatal(err)
			}
			tc.kill(t, k, killed)
			if err := k.Release(later); err != nil { // a later DEL of another pod
				t.Fatal(err)
			}
			if got := fileText(t, file); got != lnet+" = 1" {
				t.Errorf("after the next Release the file holds %q, want %q alone", got, lnet+" = 1")
			}
			if err := k.Release(other); err != nil {
				t.Fatal(err)
			}
			if got := fileText(t, file); got != "" {
				t.Errorf("after the last Release the file holds %q", got)
			}
		})
	}
}

// Prune drops the holds its function says to, given the holder and when
// the hold was taken; the file follows, and goes with the last hold.
func TestPrune(t *testing.T) {
	const fwd, lnet = "net/ipv4/ip_forward", "net/ipv4/conf/eth0/route_localnet"
	k, file := testKeeper(t)
	live, gone, fresh := Holder("bridge", "n", "live", "eth0"), Holder("bridge", "n", "gone", "eth0"), Holder("portmap", "n", "fresh", "eth0")
	if err := errors.Join(k.Hold(fwd, "1", live), k.Hold(fwd, "1", gone), k.Hold(lnet, "1", gone), k.Hold(lnet, "1", fresh)); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, key := range []string{keyDir(fwd, "1"), keyDir(lnet, "1")} {
		for _, h := range []string{live, gone} {
			_ = os.Chtimes(filepath.Join(k.HoldsDir, key, h), old, old) // absent: not this key's holder
		}
	}
	stale := func(h string, taken time.Time) bool { return h != live && taken.Before(time.Now().Add(-time.Minute)) }
	if err := k.Prune(stale); err != nil {
		t.Fatal(err)
	}
	if got, want := fileText(t, file), lnet+" = 1; "+fwd+" = 1"; got != want {
		t.Errorf("after pruning stale holds the file holds %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(k.HoldsDir, keyDir(lnet, "1"), gone)); !os.IsNotExist(err) {
		t.Errorf("gone's hold of %s: %v; want it dropped", lnet, err)
	}
	if err := k.Prune(func(h string, _ time.Time) bool { return h != live }); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, file); got != fwd+" = 1" {
		t.Errorf("after Prune the file holds %q, want %q alone", got, fwd+" = 1")
	}
	if err := k.Prune(func(string, time.Time) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("file after the last hold was pruned: %v; want it gone", err)
	}
}
