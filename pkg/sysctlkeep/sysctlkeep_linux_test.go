package sysctlkeep

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
