package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
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

// TestDeb builds the package for this machine's architecture and checks
// its control fields, its files, that it builds the same twice, and that
// dpkg installs it in place of containernetworking-plugins.
func TestDeb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every plugin; skipped with -short")
	}
	need(t, "make", "dpkg", "dpkg-deb")
	arch, ok := debArches[runtime.GOARCH]
	if !ok || runtime.GOOS != "linux" {
		t.Skipf("no package for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	root := repoRoot(t)
	name := "cnisuite_" + debVersion + "_" + arch + ".deb"
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	for _, dir := range dirs {
		makeArtifacts(t, root, "deb", dir, runtime.GOARCH)
	}
	deb := filepath.Join(dirs[0], name)
	if !bytes.Equal(readFile(t, deb), readFile(t, filepath.Join(dirs[1], name))) {
		t.Errorf("%s differs between two builds", name)
	}
	t.Run("control", func(t *testing.T) { checkControl(t, deb, arch) })
	t.Run("files", func(t *testing.T) { checkDebFiles(t, deb) })
	t.Run("install", func(t *testing.T) { checkInstall(t, deb) })
}

// checkControl asserts the fields that make the package replace Debian's
// containernetworking-plugins and satisfy podman's dependency.
func checkControl(t *testing.T, deb, arch string) {
	fields := controlFields(t, run(t, "", nil, "dpkg-deb", "--field", deb))
	want := map[string]string{
		"Package":      "cnisuite",
		"Version":      debVersion,
		"Architecture": arch,
		"Depends":      "iptables | nftables",
		"Provides":     "container-network-stack (= 1)",
		"Conflicts":    "containernetworking-plugins",
		"Replaces":     "containernetworking-plugins",
	}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("%s: %q, want %q", k, fields[k], v)
		}
	}
	if fields["Maintainer"] == "" || !strings.Contains(fields["Description"], version) {
		t.Errorf("Maintainer %q, Description %q: want a maintainer and the version", fields["Maintainer"], fields["Description"])
	}
	if kib, err := strconv.Atoi(fields["Installed-Size"]); err != nil || kib < 1024 {
		t.Errorf("Installed-Size %q, want the plugins' size in KiB", fields["Installed-Size"])
	}
}

// checkDebFiles asserts the package holds exactly the plugins in
// /usr/lib/cni, the tools in /usr/sbin and its documentation, owned by
// root, at the build's time, the binaries built for this machine.
func checkDebFiles(t *testing.T, deb string) {
	want := []string{"./", "./usr/", "./usr/lib/", "./usr/lib/cni/"}
	for _, p := range plugins {
		want = append(want, "./usr/lib/cni/"+p)
	}
	want = append(want, "./usr/sbin/")
	for _, tool := range tools {
		want = append(want, "./usr/sbin/"+tool)
	}
	want = append(want, "./usr/share/", "./usr/share/doc/", "./usr/share/doc/cnisuite/",
		"./usr/share/doc/cnisuite/README.md.gz", "./usr/share/doc/cnisuite/copyright")
	var names []string
	for _, e := range readTar(t, deb, bytes.NewReader(run(t, "", nil, "dpkg-deb", "--fsys-tarfile", deb))) {
		h := e.hdr
		names = append(names, h.Name)
		mode := int64(0o644)
		binary := h.Typeflag == tar.TypeReg &&
			(strings.HasPrefix(h.Name, "./usr/lib/cni/") || strings.HasPrefix(h.Name, "./usr/sbin/"))
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
		t.Errorf("package holds %q, want %q", names, want)
	}
}

// checkInstall installs into a throwaway dpkg root, where stand-ins for
// containernetworking-plugins (with a plugin we do not ship) and nftables
// are installed, then a package that needs container-network-stack, as
// podman's golang-github-containers-common does.
func checkInstall(t *testing.T, deb string) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, d := range []string{"info", "updates", "triggers"} {
		if err := os.MkdirAll(filepath.Join(root, "var/lib/dpkg", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	install := func(deb string) {
		t.Helper()
		run(t, dir, []string{"HOME=" + dir, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, "dpkg", "--root="+root,
			"--log=/dev/null", "--force-not-root", "--force-script-chrootless", "--install", deb)
	}
	install(fakeDeb(t, dir, "containernetworking-plugins", "", "bridge", "firewall"))
	install(fakeDeb(t, dir, "nftables", ""))
	install(deb)
	install(fakeDeb(t, dir, "golang-github-containers-common", "container-network-stack"))

	status := run(t, "", nil, "dpkg-query", "--admindir="+filepath.Join(root, "var/lib/dpkg"),
		"--show", "--showformat=${Package} ${Status}\n")
	for _, line := range []string{"cnisuite install ok installed", "golang-github-containers-common install ok installed"} {
		if !strings.Contains(string(status), line+"\n") {
			t.Errorf("dpkg status:\n%s\nwant the line %q", status, line)
		}
	}
	if strings.Contains(string(status), "containernetworking-plugins install ok installed") {
		t.Errorf("dpkg status:\n%s\nwant containernetworking-plugins removed", status)
	}
	for _, p := range plugins {
		out, err := exec.Command(filepath.Join(root, "usr/lib/cni", p)).CombinedOutput()
		if want := "cnisuite " + version; err != nil || !strings.Contains(string(out), want) {
			t.Errorf("/usr/lib/cni/%s: %v, %q; want it to say %q", p, err, out, want)
		}
	}
	for _, tool := range tools {
		checkToolRuns(t, filepath.Join(root, "usr/sbin", tool))
	}
	// The reference package's other plugins go with it: node configurations
	// naming them (podman's default names "firewall") need them from elsewhere.
	if _, err := os.Stat(filepath.Join(root, "usr/lib/cni/firewall")); !os.IsNotExist(err) {
		t.Errorf("/usr/lib/cni/firewall of the replaced package: %v, want it removed", err)
	}
}

// fakeDeb builds a stand-in package holding shell scripts named files in
// /usr/lib/cni.
func fakeDeb(t *testing.T, dir, name, depends string, files ...string) string {
	t.Helper()
	pkg := filepath.Join(dir, "fake-"+name)
	control := "Package: " + name + "\nVersion: 1.0\nArchitecture: all\nMaintainer: test <test@localhost>\nDescription: stand-in\n"
	if depends != "" {
		control += "Depends: " + depends + "\n"
	}
	paths := map[string]string{"DEBIAN/control": control}
	for _, f := range files {
		paths["usr/lib/cni/"+f] = "#!/bin/sh\necho reference\n"
	}
	for p, content := range paths {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(pkg, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o755)
		if p == "DEBIAN/control" {
			mode = 0o644
		}
		if err := os.WriteFile(filepath.Join(pkg, p), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, nil, "dpkg-deb", "--root-owner-group", "--build", pkg, pkg+".deb")
	return pkg + ".deb"
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
