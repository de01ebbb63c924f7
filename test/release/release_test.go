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
	"hash"
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

// plugins are the plugins every artifact must hold; each carries the
// version, stamped into pkg/skel.
var plugins = []string{"bridge", "host-local", "loopback", "portmap", "tuning"}

// tools are the commands every artifact must hold beside the plugins; each
// carries the version too (cnisuite -version and cnisuite-gc -version
// print it).
var tools = []string{"cnisuite", "cnisuite-gc"}

// tarName is the file name of an architecture's tarball.
func tarName(arch string) string { return "cnisuite-linux-" + arch + "-" + version + ".tgz" }

func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every plugin for six architectures; skipped with -short")
	}
	need(t, "make", "tar", "gzip")
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "release")
	makeArtifacts(t, root, "release", dir, "")

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

// textFiles are the tarball's files that are not programs, each with its
// source in the repository: LICENSE, README.md and the systemd units.
var textFiles = map[string]string{
	"LICENSE": "LICENSE", "README.md": "README.md",
	"cnisuite-resync.service": "packaging/systemd/cnisuite-resync.service",
	"cnisuite-watch.service":  "packaging/systemd/cnisuite-watch.service",
}

// checkTarball asserts an architecture's tarball holds exactly the plugins,
// the tools, LICENSE, README.md and the systemd units, flat and in byte
// order, with fixed modes, owners and times, the text files as in the
// repository, and binaries built for that architecture as asked.
func checkTarball(t *testing.T, root, dir, arch string) {
	entries := readTarball(t, filepath.Join(dir, tarName(arch)))
	var names []string
	for _, e := range entries {
		names = append(names, e.hdr.Name)
	}
	want := slices.Concat([]string{"LICENSE", "README.md"}, plugins, tools, units)
	slices.Sort(want)
	for i, name := range want {
		want[i] = "./" + name
	}
	if !slices.Equal(names, want) {
		t.Fatalf("%s holds %q, want %q", tarName(arch), names, want)
	}
	for _, e := range entries {
		h, name := e.hdr, strings.TrimPrefix(e.hdr.Name, "./")
		wantMode := int64(0o755)
		if src, ok := textFiles[name]; ok {
			wantMode = 0o644
			if repo := readFile(t, filepath.Join(root, src)); !bytes.Equal(e.data, repo) {
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
	checkBridgeKnowsHostLocal(t, arch, entries)
}

// checkBridgeKnowsHostLocal asserts bridge was linked with the Go build ID
// of the host-local beside it (scripts/build.sh), without which it starts
// host-local as a process instead of running it in its own.
func checkBridgeKnowsHostLocal(t *testing.T, arch string, entries []entry) {
	data := map[string][]byte{}
	for _, e := range entries {
		data[strings.TrimPrefix(e.hdr.Name, "./")] = e.data
	}
	f, err := elf.NewFile(bytes.NewReader(data["host-local"]))
	if err != nil {
		t.Fatalf("%s/host-local: %v", arch, err)
	}
	sec := f.Section(".note.go.buildid")
	if sec == nil {
		t.Fatalf("%s/host-local has no Go build ID note", arch)
	}
	note, err := sec.Data()
	if err != nil || len(note) < 17 {
		t.Fatalf("%s/host-local: build ID note %q, %v", arch, note, err)
	}
	id := note[16 : 16+f.ByteOrder.Uint32(note[4:])] // after namesz, descsz, type and "Go\0\0"
	if !bytes.Contains(data["bridge"], id) {
		t.Errorf("%s/bridge does not carry host-local's build ID %q", arch, id)
	}
}

// checkBinary asserts a plugin or tool is a static ELF executable for arch,
// built with -trimpath and without cgo, with the version stamped in.
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

// checkRuns runs this machine's architecture's plugins and tools, unpacked
// as an operator would unpack them, and checks the plugins answer VERSION
// and print the stamped version in their about text, and the tools their
// usage.
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
	for _, tool := range tools {
		checkToolRuns(t, filepath.Join(bin, tool), version)
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
		var env []string
		if b.fresh {
			env = append(env, "GOCACHE="+filepath.Join(t.TempDir(), "gocache"))
		}
		makeArtifacts(t, root, "release", again, b.arch, env...)
		x, y := readFile(t, filepath.Join(first, tarName(b.arch))), readFile(t, filepath.Join(again, tarName(b.arch)))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds (%d and %d bytes)", tarName(b.arch), len(x), len(y))
		}
	}
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
	return readTar(t, path, zr)
}
