package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"cnisuite/test/release/debroot"
)

// debVersion is what version becomes in the package.
const debVersion = "9.8.7~rc1+3.gabc1234.dirty"

// debArches names the release architectures the way Debian does.
var debArches = map[string]string{
	"amd64": "amd64", "arm64": "arm64", "arm": "armhf",
	"ppc64le": "ppc64el", "s390x": "s390x", "riscv64": "riscv64",
}

// TestDebVersion: git describe strings become valid Debian versions that
// sort as the commits do.
func TestDebVersion(t *testing.T) {
	need(t, "dpkg")
	root := repoRoot(t)
	// In the order dpkg must sort them.
	tests := []struct{ describe, want string }{
		{"abc1234", "0.0~git20231114.abc1234"},
		{"abc1234-dirty", "0.0~git20231114.abc1234+dirty"},
		{"v0.1.0", "0.1.0"},
		{"v1.2.3-rc1", "1.2.3~rc1"},
		{"v1.2.3-rc1-3-gabc1234", "1.2.3~rc1+3.gabc1234"},
		{"v1.2.3", "1.2.3"},
		{"v1.2.3-1-gdef5678", "1.2.3+1.gdef5678"},
		{"v1.2.3-1-gdef5678-dirty", "1.2.3+1.gdef5678.dirty"},
		{"v1.2.3-12-g0123456", "1.2.3+12.g0123456"},
		{"v1.2.3-dirty", "1.2.3+dirty"},
		{"1.2.4", "1.2.4"},
	}
	for i, tt := range tests {
		got := strings.TrimSpace(string(run(t, root, buildEnv, "scripts/release.sh", "debversion", tt.describe)))
		if got != tt.want {
			t.Errorf("debversion(%q) = %q, want %q", tt.describe, got, tt.want)
		}
		if i > 0 {
			prev := tests[i-1].want
			if err := exec.Command("dpkg", "--compare-versions", prev, "lt", got).Run(); err != nil {
				t.Errorf("dpkg --compare-versions %s lt %s: %v", prev, got, err)
			}
		}
	}
	// Without SOURCE_DATE_EPOCH the time is the commit's.
	day := strings.TrimSpace(string(run(t, root, []string{"TZ=UTC"}, "git", "log", "-1", "--format=%cd", "--date=format-local:%Y%m%d")))
	cmd := exec.Command("scripts/release.sh", "debversion", "abc1234")
	cmd.Dir = root
	cmd.Env = inherited()
	if out, err := cmd.Output(); err != nil || string(out) != "0.0~git"+day+".abc1234\n" {
		t.Errorf("debversion(abc1234) at the commit's time = %q, %v; want the commit's day %s", out, err, day)
	}
	for _, bad := range []string{"latest", "v", "-1"} {
		cmd := exec.Command("scripts/release.sh", "debversion", bad)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("debversion(%q) = %q, want an error", bad, out)
		}
	}
}

// TestDeb builds the packages for this machine's architecture and checks
// their control fields, their files, that they build the same twice, and
// that dpkg installs them beside Debian's containernetworking-plugins and
// takes them away again, in every order (beside_test.go).
func TestDeb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every plugin; skipped with -short")
	}
	need(t, "make", "dpkg", "dpkg-deb", "dpkg-divert")
	arch, ok := debArches[runtime.GOARCH]
	if !ok || runtime.GOOS != "linux" {
		t.Skipf("no package for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	root := repoRoot(t)
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	for _, dir := range dirs {
		makeArtifacts(t, root, "deb", dir, runtime.GOARCH)
	}
	for _, pkg := range []string{"cnisuite", "cnisuite-tools"} {
		name := pkg + "_" + debVersion + "_" + arch + ".deb"
		if !bytes.Equal(readFile(t, filepath.Join(dirs[0], name)), readFile(t, filepath.Join(dirs[1], name))) {
			t.Errorf("%s differs between two builds", name)
		}
	}
	debs := map[string]debroot.Suite{
		version: {Plugins: filepath.Join(dirs[0], "cnisuite_"+debVersion+"_"+arch+".deb"),
			Tools: filepath.Join(dirs[0], "cnisuite-tools_"+debVersion+"_"+arch+".deb")},
		version2: debroot.BuildSuite(t, root, version2),
	}
	t.Run("control", func(t *testing.T) { checkControl(t, debs[version], arch) })
	t.Run("files", func(t *testing.T) { checkDebFiles(t, debs[version]) })
	t.Run("reference_first", func(t *testing.T) { testReferenceFirst(t, debs) })
	t.Run("ours_first", func(t *testing.T) { testOursFirst(t, debs) })
	t.Run("ours_alone", func(t *testing.T) { testOursAlone(t, debs) })
	t.Run("from_conflicting", func(t *testing.T) { testFromConflicting(t, debs) })
	t.Run("podman_default_network", func(t *testing.T) { testPodmanNetwork(t, debs[version]) })
}

// checkControl asserts the fields that make the plugins install beside
// Debian's containernetworking-plugins (no Conflicts, no Replaces: the
// maintainer scripts divert its five), satisfy podman's dependency, and
// keep the tools in a package of their own.
func checkControl(t *testing.T, s debroot.Suite, arch string) {
	want := map[string]map[string]string{
		s.Plugins: {
			"Package":      "cnisuite",
			"Version":      debVersion,
			"Architecture": arch,
			"Depends":      "cnisuite-tools (= " + debVersion + "), iptables | nftables",
			"Recommends":   "containernetworking-plugins",
			"Provides":     "container-network-stack (= 1)",
			"Conflicts":    "",
			"Replaces":     "",
			"Breaks":       "",
		},
		s.Tools: {
			"Package":      "cnisuite-tools",
			"Version":      debVersion,
			"Architecture": arch,
			"Depends":      "",
			"Replaces":     "cnisuite (<< " + debVersion + ")",
			"Breaks":       "",
			"Conflicts":    "",
		},
	}
	for deb, fields := range want {
		got := controlFields(t, run(t, "", nil, "dpkg-deb", "--field", deb))
		for k, v := range fields {
			if got[k] != v {
				t.Errorf("%s: %s: %q, want %q", filepath.Base(deb), k, got[k], v)
			}
		}
		if got["Maintainer"] == "" || !strings.Contains(got["Description"], version) {
			t.Errorf("%s: Maintainer %q, Description %q: want a maintainer and the version",
				filepath.Base(deb), got["Maintainer"], got["Description"])
		}
		if kib, err := strconv.Atoi(got["Installed-Size"]); err != nil || kib < 1024 {
			t.Errorf("%s: Installed-Size %q, want the binaries' size in KiB", filepath.Base(deb), got["Installed-Size"])
		}
	}
	scripts := run(t, "", nil, "dpkg-deb", "--info", s.Plugins)
	for _, script := range []string{"preinst", "postrm"} {
		if !strings.Contains(string(scripts), " "+script+" ") {
			t.Errorf("cnisuite has no %s:\n%s", script, scripts)
		}
	}
}

// units are the systemd units of cnisuite-tools (packaging/systemd).
var units = []string{"cnisuite-resync.service", "cnisuite-watch.service"}

// checkDebFiles asserts the plugins package holds exactly the plugins in
// /usr/lib/cni and its documentation, the tools package the tools in
// /usr/sbin, the plugins for cnisuite-gc in /usr/lib/cnisuite/bin, the
// systemd units and its documentation, owned by root, at the build's time, the binaries built
// for this machine.
func checkDebFiles(t *testing.T, s debroot.Suite) {
	want := []string{"./", "./usr/", "./usr/lib/", "./usr/lib/cni/"}
	for _, p := range plugins {
		want = append(want, "./usr/lib/cni/"+p)
	}
	checkDebTree(t, s.Plugins, append(want, docFiles("cnisuite")...))
	want = []string{"./", "./usr/", "./usr/lib/", "./usr/lib/cnisuite/", "./usr/lib/cnisuite/bin/"}
	for _, p := range plugins {
		want = append(want, "./usr/lib/cnisuite/bin/"+p)
	}
	want = append(want, "./usr/lib/systemd/", "./usr/lib/systemd/system/")
	for _, u := range units {
		want = append(want, "./usr/lib/systemd/system/"+u)
	}
	want = append(want, "./usr/sbin/")
	for _, tool := range tools {
		want = append(want, "./usr/sbin/"+tool)
	}
	checkDebTree(t, s.Tools, append(want, docFiles("cnisuite-tools")...))
}

// docFiles are the documentation entries of package pkg.
func docFiles(pkg string) []string {
	return []string{"./usr/share/", "./usr/share/doc/", "./usr/share/doc/" + pkg + "/",
		"./usr/share/doc/" + pkg + "/README.md.gz", "./usr/share/doc/" + pkg + "/copyright"}
}

// checkDebTree asserts the package file deb holds the entries want, in
// order, with owner, mode and time as a release has them.
func checkDebTree(t *testing.T, deb string, want []string) {
	var names []string
	for _, e := range readTar(t, deb, bytes.NewReader(run(t, "", nil, "dpkg-deb", "--fsys-tarfile", deb))) {
		h := e.hdr
		names = append(names, h.Name)
		mode := int64(0o644)
		binary := h.Typeflag == tar.TypeReg && (strings.HasPrefix(h.Name, "./usr/lib/cni/") ||
			strings.HasPrefix(h.Name, "./usr/lib/cnisuite/bin/") || strings.HasPrefix(h.Name, "./usr/sbin/"))
		if binary {
			checkBinary(t, runtime.GOARCH, path.Base(h.Name), e.data)
		}
		if h.Typeflag == tar.TypeDir || binary {
			mode = 0o755
		}
		if h.Mode != mode || h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Gname != "root" || h.ModTime.Unix() != epoch {
			t.Errorf("%s: mode %o owner %d:%d (%s:%s) time %d, want mode %o root:root at %d",
				h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.Unix(), mode, epoch)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("%s holds %q, want %q", filepath.Base(deb), names, want)
	}
}

// controlFields parses dpkg-deb --field output; continuation lines are
// joined to their field with newlines.
func controlFields(t *testing.T, out []byte) map[string]string {
	fields := map[string]string{}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") && last != "" {
			fields[last] += "\n" + line
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("control line %q has no field name", line)
		}
		last = k
		fields[k] = strings.TrimSpace(v)
	}
	return fields
}
