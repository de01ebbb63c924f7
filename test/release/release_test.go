// Package release tests the release artifacts as a user meets them: the
// tarballs and checksum files of `make release` and the Debian package of
// `make deb`, built from this checkout into a temporary directory.
//
// Building six architectures costs minutes on a cold build cache; with
// -short these tests skip.
package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// version is stamped into the test builds: a release candidate three
// commits on, from a modified tree, exercises every part of the Debian
// version mapping.
const version = "v9.8.7-rc1-3-gabc1234-dirty"

// epoch is the time every file of the test builds carries. A release takes
// the commit's time; the tests fix it so a commit landing mid-test cannot
// change it.
const epoch = 1700000000

// buildEnv is the environment of every test build.
var buildEnv = []string{"SOURCE_DATE_EPOCH=" + strconv.Itoa(epoch)}

// arches are the release architectures and the ELF machine of each.
var arches = map[string]struct {
	machine elf.Machine
	class   elf.Class
	order   elf.Data
}{
	"amd64":   {elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"arm64":   {elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"arm":     {elf.EM_ARM, elf.ELFCLASS32, elf.ELFDATA2LSB},
	"ppc64le": {elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"s390x":   {elf.EM_S390, elf.ELFCLASS64, elf.ELFDATA2MSB},
	"riscv64": {elf.EM_RISCV, elf.ELFCLASS64, elf.ELFDATA2LSB},
}

// plugins are the binaries every artifact must hold.
var plugins = []string{"bridge", "host-local", "loopback", "portmap", "tuning"}

// tarName is the file name of an architecture's tarball.
func tarName(arch string) string { return "cnisuite-linux-" + arch + "-" + version + ".tgz" }

func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every plugin for six architectures; skipped with -short")
	}
	need(t, "make", "tar", "gzip")
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "release")
	run(t, root, buildEnv, "make", "release", "RELEASE_DIR="+dir, "VERSION="+version)

	for arch := range arches {
		t.Run("tarball/"+arch, func(t *testing.T) { checkTarball(t, root, dir, arch) })
	}
	t.Run("checksums", func(t *testing.T) {
		checkSums(t, dir, "SHA256SUMS", sha256.New)
		checkSums(t, dir, "SHA512SUMS", sha512.New)
	})
	t.Run("binaries run", func(t *testing.T) { checkRuns(t, dir) })
	t.Run("reproducible", func(t *testing.T) { checkReproducible(t, root, dir) })
}

// checkTarball asserts an architecture's tarball holds exactly the plugins,
// LICENSE and README.md, with fixed modes, owners and times, and binaries
// built for that architecture as asked.
func checkTarball(t *testing.T, root, dir, arch string) {
	entries := readTarball(t, filepath.Join(dir, tarName(arch)))
	var names []string
	for _, e := range entries {
		names = append(names, e.hdr.Name)
	}
	want := []string{"./LICENSE", "./README.md"}
	for _, p := range plugins {
		want = append(want, "./"+p)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("%s holds %q, want %q", tarName(arch), names, want)
	}
	for _, e := range entries {
		h, name := e.hdr, strings.TrimPrefix(e.hdr.Name, "./")
		wantMode := int64(0o755)
		if name == "LICENSE" || name == "README.md" {
			wantMode = 0o644
			if repo := readFile(t, filepath.Join(root, name)); !bytes.Equal(e.data, repo) {
				t.Errorf("%s: %s differs from the repository's", arch, name)
			}
		} else {
			checkBinary(t, arch, name, e.data)
		}
		if h.Typeflag != tar.TypeReg || h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 ||
			h.Uname != "" || h.Gname != "" || h.ModTime.Unix() != epoch {
			t.Errorf("%s: %s is type %c mode %o owner %d:%d (%q:%q) time %d, want a 0%o file of 0:0 at %d",
				arch, name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.Unix(), wantMode, epoch)
		}
	}
}

// checkBinary asserts a plugin is a static ELF executable for arch, built
// with -trimpath, without cgo, and with the version stamped in.
func checkBinary(t *testing.T, arch, name string, data []byte) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s/%s is not ELF: %v", arch, name, err)
		return
	}
	want := arches[arch]
	if f.Machine != want.machine || f.Class != want.class || f.Data != want.order || f.Type != elf.ET_EXEC {
		t.Errorf("%s/%s is %v %v %v %v, want an executable for %v %v %v",
			arch, name, f.Type, f.Machine, f.Class, f.Data, want.machine, want.class, want.order)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s/%s asks for a dynamic loader: it must be static", arch, name)
		}
	}
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s/%s: reading Go build info: %v", arch, name, err)
		return
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOARCH"] != arch || settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("%s/%s was built with %v, want GOARCH=%s CGO_ENABLED=0 -trimpath", arch, name, settings, arch)
	}
	// With -trimpath the build info leaves -ldflags out, so the version's
	// only copy in the binary is the one -X stamped into skel.Suite.
	if !bytes.Contains(data, []byte(version)) {
		t.Errorf("%s/%s does not contain the version %q", arch, name, version)
	}
}

// checkSums asserts the checksum file names every tarball once, with its
// right sum.
func checkSums(t *testing.T, dir, file string, newHash func() hash.Hash) {
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, filepath.Join(dir, file))))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if _, dup := sums[name]; !ok || dup {
			t.Errorf("%s: line %q is malformed or repeats a name", file, sc.Text())
		}
		sums[name] = sum
	}
	if len(sums) != len(arches) {
		t.Errorf("%s names %d files, want the %d tarballs", file, len(sums), len(arches))
	}
	for arch := range arches {
		h := newHash()
		h.Write(readFile(t, filepath.Join(dir, tarName(arch))))
		if got, want := sums[tarName(arch)], hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("%s: %s has sum %q, want %q", file, tarName(arch), got, want)
		}
	}
}

// checkRuns runs this machine's architecture's plugins, unpacked as an
// operator would unpack them, and checks they answer VERSION and print the
// stamped version in their about text.
func checkRuns(t *testing.T, dir string) {
	if _, ok := arches[runtime.GOARCH]; !ok || runtime.GOOS != "linux" {
		t.Skipf("no release binaries for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := t.TempDir()
	run(t, "", nil, "tar", "-C", bin, "-xzf", filepath.Join(dir, tarName(runtime.GOARCH)))
	for _, p := range plugins {
		cmd := exec.Command(filepath.Join(bin, p))
		cmd.Env = []string{"CNI_COMMAND=VERSION"}
		cmd.Stdin = strings.NewReader(`{"cniVersion":"1.0.0"}`)
		out, err := cmd.Output()
		var answer struct {
			CNIVersion        string   `json:"cniVersion"`
			SupportedVersions []string `json:"supportedVersions"`
		}
		if err != nil || json.Unmarshal(out, &answer) != nil || answer.CNIVersion != "1.0.0" ||
			!slices.Contains(answer.SupportedVersions, "0.1.0") || !slices.Contains(answer.SupportedVersions, "1.1.0") {
			t.Errorf("%s VERSION = %q, %v; want 1.0.0 and versions 0.1.0 to 1.1.0", p, out, err)
		}
		cmd = exec.Command(filepath.Join(bin, p))
		cmd.Env = []string{}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		want := "CNI " + p + " plugin (cnisuite " + version + ")"
		if err := cmd.Run(); err != nil || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s without CNI_COMMAND: %v, stderr %q; want it to contain %q", p, err, stderr.String(), want)
		}
	}
}

// checkReproducible builds this machine's architecture again with an empty
// Go build cache, so nothing is reused, and one other architecture with the
// warm cache (relinked and repacked), and compares the bytes.
func checkReproducible(t *testing.T, root, first string) {
	other := "riscv64"
	if runtime.GOARCH == other {
		other = "arm64"
	}
	builds := []struct {
		arch  string
		fresh bool
	}{{runtime.GOARCH, true}, {other, false}}
	for _, b := range builds {
		again := filepath.Join(t.TempDir(), "again")
		env := append([]string{"VERSION=" + version, "RELEASE_DIR=" + again, "ARCHES=" + b.arch}, buildEnv...)
		if b.fresh {
			env = append(env, "GOCACHE="+filepath.Join(t.TempDir(), "gocache"))
		}
		run(t, root, env, "scripts/release.sh", "tarballs")
		x, y := readFile(t, filepath.Join(first, tarName(b.arch))), readFile(t, filepath.Join(again, tarName(b.arch)))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds (%d and %d bytes)", tarName(b.arch), len(x), len(y))
		}
	}
}

// entry is one file of a tarball.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// readTarball reads every entry of a gzipped tarball, in order, and checks
// the gzip header carries no name and no time.
func readTarball(t *testing.T, path string) []entry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(readFile(t, path)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("%s: gzip header carries name %q and time %v, want neither (gzip -n)", path, zr.Name, zr.ModTime)
	}
	var out []entry
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		out = append(out, entry{h, data})
	}
}

// need skips the test when a tool is missing, unless the run requires
// every test (make test), where that is a failure.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CNISUITE_REQUIRE_PRIVILEGED") == "1" {
				t.Fatalf("%s is not installed", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
}

// repoRoot is the checkout this package lives in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts/release.sh")); err != nil {
		t.Fatalf("not in the cnisuite checkout: %v", err)
	}
	return root
}

// run runs a command in dir with env added to the test's environment and
// returns its standard output; a failure ends the test with its output.
func run(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(inherited(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// inherited is the test's environment without what would change a build
// from the one a user starts: the settings of a make that runs the tests
// (make test ARCHES=amd64) and the release script's own variables.
func inherited() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL",
			"ARCHES", "RELEASE_DIR", "VERSION", "SOURCE_DATE_EPOCH", "DEB_MAINTAINER"}, k)
	})
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
