// Package debroot installs Debian packages into throwaway dpkg roots, as an
// administrator would install them on a node, without touching the
// machine's own package database: dpkg runs with --root, as a user it
// believes is not root, with maintainer scripts run outside a chroot and
// DPKG_ROOT set (Debian's containernetworking-plugins and our cnisuite
// honour it). The release tests and the end-to-end tests share it.
//
// Debian's containernetworking-plugins is not built here: scripts/install-deps.sh
// fetches it with `apt-get download` into CacheDir, since the tests run
// without network.
package debroot

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// CacheDir holds the Debian packages scripts/install-deps.sh downloads; the
// sandbox leaves it visible.
const CacheDir = "/var/cache/cnisuite/debs"

// Reference is the package whose five plugins ours divert.
const Reference = "containernetworking-plugins"

// Root is a dpkg root in a temporary directory of the test's own.
type Root struct {
	t   testing.TB
	Dir string
	// work holds stand-in packages and dpkg's HOME.
	work string
}

// New makes an empty dpkg root and installs stand-ins for the packages
// Debian's containernetworking-plugins and cnisuite depend on (libc6,
// iptables), so that dpkg checks every dependency without installing the
// machine's own system into the root.
func New(t testing.TB) *Root {
	t.Helper()
	work := t.TempDir()
	r := &Root{t: t, Dir: filepath.Join(work, "root"), work: work}
	for _, d := range []string{"info", "updates", "triggers"} {
		if err := os.MkdirAll(filepath.Join(r.Dir, "var/lib/dpkg", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.Install(StandIn(t, work, "libc6", "2.36"), StandIn(t, work, "iptables", "1.8.9"))
	return r
}

// Path names a file of the root, seen from the test.
func (r *Root) Path(p string) string { return filepath.Join(r.Dir, p) }

// Dpkg runs dpkg on the root and returns its standard output; a failure
// ends the test with everything dpkg printed.
func (r *Root) Dpkg(args ...string) string {
	r.t.Helper()
	out, err := r.dpkg(args...)
	if err != nil {
		r.t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// dpkg runs dpkg on the root and returns its combined output.
func (r *Root) dpkg(args ...string) (string, error) {
	full := append([]string{"--root=" + r.Dir, "--log=/dev/null", "--force-not-root",
		"--force-script-chrootless"}, args...)
	cmd := exec.Command("dpkg", full...)
	cmd.Dir = r.work
	cmd.Env = []string{"HOME=" + r.work, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Install installs the package files debs in one dpkg run.
func (r *Root) Install(debs ...string) {
	r.t.Helper()
	r.Dpkg(append([]string{"--install"}, debs...)...)
}

// Remove removes a package, keeping what dpkg keeps until a purge.
func (r *Root) Remove(pkg string) {
	r.t.Helper()
	r.Dpkg("--remove", pkg)
}

// Purge purges a package.
func (r *Root) Purge(pkg string) {
	r.t.Helper()
	r.Dpkg("--purge", pkg)
}

// Status returns the package's status as dpkg-query shows it ("install ok
// installed"), empty when dpkg does not know it or knows it as purged
// ("unknown ok not-installed").
func (r *Root) Status(pkg string) string {
	r.t.Helper()
	out, err := r.query("--show", "--showformat=${Status}", pkg)
	if err != nil || strings.HasSuffix(out, " not-installed") {
		return ""
	}
	return out
}

func (r *Root) query(args ...string) (string, error) {
	cmd := exec.Command("dpkg-query", append([]string{"--admindir=" + r.Path("var/lib/dpkg")}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Owners returns `dpkg -S path` as dpkg prints it: the diversion lines
// first, then the packages holding the path. A path no package holds
// gives an empty string.
func (r *Root) Owners(path string) string {
	r.t.Helper()
	out, err := r.dpkg("--search", path)
	if err != nil && !strings.Contains(out, "no path found") {
		r.t.Fatalf("dpkg --search %s: %v\n%s", path, err, out)
	}
	if err != nil {
		return ""
	}
	return out
}

// Diversions returns `dpkg-divert --list` of the root, sorted.
func (r *Root) Diversions() []string {
	r.t.Helper()
	cmd := exec.Command("dpkg-divert", "--list")
	cmd.Env = []string{"DPKG_ROOT=" + r.Dir, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("dpkg-divert --list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	lines = slices.DeleteFunc(lines, func(s string) bool { return s == "" })
	slices.Sort(lines)
	return lines
}

// Audit returns what `dpkg --audit` and `dpkg --verify` find wrong in the
// root: half-installed or unconfigured packages, and installed files
// that differ from what their package holds. Empty is a clean root.
func (r *Root) Audit() string {
	r.t.Helper()
	var problems []string
	for _, check := range []string{"--audit", "--verify"} {
		out, err := r.dpkg(check)
		if err != nil || strings.TrimSpace(out) != "" {
			problems = append(problems, fmt.Sprintf("dpkg %s: %v\n%s", check, err, out))
		}
	}
	return strings.Join(problems, "\n")
}

// Files lists the names in the root's directory dir, sorted; none when it
// does not exist.
func (r *Root) Files(dir string) []string {
	r.t.Helper()
	entries, err := os.ReadDir(r.Path(dir))
	if err != nil && !os.IsNotExist(err) {
		r.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// StandIn builds, in dir, a package name at version that holds nothing;
// fields are more control lines ("Depends: iptables").
func StandIn(t testing.TB, dir, name, version string, fields ...string) string {
	t.Helper()
	pkg := filepath.Join(dir, "standin-"+name+"-"+version)
	control := "Package: " + name + "\nVersion: " + version +
		"\nArchitecture: all\nMaintainer: test <test@localhost>\nDescription: stand-in\n"
	for _, f := range fields {
		control += f + "\n"
	}
	if err := os.MkdirAll(filepath.Join(pkg, "DEBIAN"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "DEBIAN/control"), []byte(control), 0o644); err != nil {
		t.Fatal(err)
	}
	return build(t, pkg, "-Znone")
}

// build runs dpkg-deb --build on the package tree dir into dir.deb.
func build(t testing.TB, dir string, flags ...string) string {
	t.Helper()
	args := append(append([]string{"--root-owner-group"}, flags...), "--build", dir, dir+".deb")
	if out, err := exec.Command("dpkg-deb", args...).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir + ".deb"
}

// ReferenceDeb returns the path of Debian's containernetworking-plugins
// package in CacheDir. When it is missing the test fails under
// CNISUITE_REQUIRE_PRIVILEGED=1 (make test) and skips otherwise, saying
// how to fetch it.
func ReferenceDeb(t testing.TB) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(CacheDir, Reference+"_*.deb"))
	if err == nil && len(matches) == 1 {
		return matches[0]
	}
	why := fmt.Sprintf("%s_*.deb: want one in %s, found %v (%v); scripts/install-deps.sh downloads it",
		Reference, CacheDir, matches, err)
	if os.Getenv("CNISUITE_REQUIRE_PRIVILEGED") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

// Rebuild unpacks the package deb (control files and maintainer scripts
// included) into a directory of dir, sets its Version to version, packs
// it again and returns the new file: the same package, one version on,
// for upgrade tests.
func Rebuild(t testing.TB, dir, deb, version string) string {
	t.Helper()
	tree := filepath.Join(dir, "rebuilt-"+filepath.Base(deb)+"-"+version)
	if out, err := exec.Command("dpkg-deb", "--raw-extract", deb, tree).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --raw-extract %s: %v\n%s", deb, err, out)
	}
	control := filepath.Join(tree, "DEBIAN/control")
	data, err := os.ReadFile(control)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "Version: ") {
			line = "Version: " + version
		}
		lines = append(lines, line)
	}
	if err := os.WriteFile(control, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// No compression: the test only installs it, and xz of 40 MiB costs.
	return build(t, tree, "-Znone")
}

// Field returns one control field of the package file deb.
func Field(t testing.TB, deb, field string) string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", "--field", deb, field).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --field %s %s: %v", deb, field, err)
	}
	return string(bytes.TrimSpace(out))
}

// Contents returns the regular files of the package file deb below the
// directory dir (as "usr/lib/cni"), by base name, with their bytes.
func Contents(t testing.TB, deb, dir string) map[string][]byte {
	t.Helper()
	tree := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "--extract", deb, tree).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --extract %s: %v\n%s", deb, err, out)
	}
	entries, err := os.ReadDir(filepath.Join(tree, dir))
	if err != nil {
		t.Fatalf("%s: %v", deb, err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(tree, dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

// Suite is a build of our two packages.
type Suite struct {
	Plugins string // cnisuite_<version>_<arch>.deb
	Tools   string // cnisuite-tools_<version>_<arch>.deb
}

// BuildSuite builds our packages for this machine's architecture from the
// checkout repo with scripts/release.sh deb, the version stamped in being
// version, into a directory of the test's own.
func BuildSuite(t testing.TB, repo, version string) Suite {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(repo, "scripts/release.sh"), "deb")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "VERSION="+version, "RELEASE_DIR="+dir,
		"ARCHES="+runtime.GOARCH, "SOURCE_DATE_EPOCH=1700000000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh deb: %v\n%s", err, out)
	}
	return Suite{Plugins: only(t, dir, "cnisuite_*.deb"), Tools: only(t, dir, "cnisuite-tools_*.deb")}
}

// only returns the one file in dir matching pattern.
func only(t testing.TB, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("%s in %s: %v %v, want one file", pattern, dir, m, err)
	}
	return m[0]
}
