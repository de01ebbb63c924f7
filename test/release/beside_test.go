package release

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cnisuite/test/release/debroot"
)

// refDir is where our package diverts the reference package's copies of
// our five plugins (scripts/release.sh, REFDIR).
const refDir = "usr/lib/cnisuite/reference"

// gcBin is where cnisuite-tools keeps the plugins cnisuite-gc runs after
// going back (scripts/release.sh, GCBIN).
const gcBin = "usr/lib/cnisuite/bin"

// version2 is the next build of ours, for the upgrade steps.
const (
	version2    = "v9.8.7-rc1-4-gdef5678"
	debVersion2 = "9.8.7~rc1+4.gdef5678"
)

// lease stands for the state of a running pod: no step of ours may delete
// it.
const lease = "var/lib/cni/networks/podman/10.88.0.2"

// beside is one throwaway node with what a test expects to be installed
// on it.
type beside struct {
	t    *testing.T
	root *debroot.Root
	// ref and ours are the packages to install; refNext is ref one version on.
	ref, refNext string
	ours         map[string]debroot.Suite // by version
	// Plugin bytes by name, of the reference and of ours by version.
	refFiles  map[string][]byte
	ourFiles  map[string]map[string][]byte
	installed struct {
		ref  bool
		ours string // the version of ours installed, "" for none
		// tools is the version of cnisuite-tools installed (it stays
		// when ours goes).
		tools string
	}
}

// newBeside makes a throwaway dpkg root for the packages of ours, built at
// version (debs[version]) and version2, and Debian's
// containernetworking-plugins.
func newBeside(t *testing.T, debs map[string]debroot.Suite) *beside {
	ref := debroot.ReferenceDeb(t)
	b := &beside{t: t, root: debroot.New(t), ref: ref, ours: debs,
		refFiles: debroot.Contents(t, ref, "usr/lib/cni"), ourFiles: map[string]map[string][]byte{}}
	b.refNext = debroot.Rebuild(t, t.TempDir(), ref, debroot.Field(t, ref, "Version")+"+cnisuite1")
	for v, s := range debs {
		b.ourFiles[v] = debroot.Contents(t, s.Plugins, "usr/lib/cni")
	}
	if err := os.MkdirAll(filepath.Dir(b.root.Path(lease)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.root.Path(lease), []byte("c0ffee\r\neth0"), 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// step runs one administrator's action and then checks the node.
func (b *beside) step(name string, action func()) {
	b.t.Helper()
	b.t.Logf("step: %s", name)
	action()
	b.check(name)
}

func (b *beside) installRef(deb string) {
	b.root.Install(deb)
	b.installed.ref = true
}

// installOurs installs (or upgrades to) ours at version v, the tools with it.
func (b *beside) installOurs(v string) {
	s := b.ours[v]
	b.root.Install(s.Tools, s.Plugins)
	b.installed.ours, b.installed.tools = v, v
}

func (b *beside) removeOurs() {
	b.root.Remove("cnisuite")
	b.installed.ours = ""
}

// check asserts, after the step name, the plugin files in /usr/lib/cni and
// the diverted ones, the owners dpkg -S names, the diversions, a clean
// dpkg --audit and --verify, and that the pod's lease is still there.
func (b *beside) check(name string) {
	b.t.Helper()
	if names, want := b.root.Files("usr/lib/cni"), b.wantPlugins(); !slices.Equal(names, want) {
		b.t.Errorf("after %s: /usr/lib/cni holds %q, want %q", name, names, want)
	}
	b.checkBytes(name)
	b.checkOwners(name)
	if got, want := b.root.Diversions(), b.wantDiversions(); !slices.Equal(got, want) {
		b.t.Errorf("after %s: dpkg-divert --list:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if problems := b.root.Audit(); problems != "" {
		b.t.Errorf("after %s: %s", name, problems)
	}
	if _, err := os.Stat(b.root.Path(lease)); err != nil {
		b.t.Errorf("after %s: the pod's lease: %v", name, err)
	}
	if b.installed.tools != "" {
		checkToolRuns(b.t, b.root.Path("usr/sbin/cnisuite-gc"), b.installed.tools)
	}
	if b.t.Failed() {
		b.t.FailNow() // later steps would only repeat this failure
	}
}

// wantPlugins are the names /usr/lib/cni must hold.
func (b *beside) wantPlugins() []string {
	var names []string
	if b.installed.ref {
		for p := range b.refFiles {
			names = append(names, p)
		}
	}
	if b.installed.ours != "" {
		names = append(names, plugins...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// checkBytes asserts each plugin in /usr/lib/cni is ours while ours is
// installed and the reference's otherwise, and that the reference's
// copies of our five wait in refDir exactly while both are installed.
func (b *beside) checkBytes(name string) {
	b.t.Helper()
	for _, p := range b.wantPlugins() {
		want, whose := b.refFiles[p], debroot.Reference
		if b.installed.ours != "" && slices.Contains(plugins, p) {
			want, whose = b.ourFiles[b.installed.ours][p], "cnisuite "+b.installed.ours
		}
		if got, err := os.ReadFile(b.root.Path("usr/lib/cni/" + p)); err != nil || !bytes.Equal(got, want) {
			b.t.Errorf("after %s: /usr/lib/cni/%s (%v) is not the one of %s", name, p, err, whose)
		}
	}
	var diverted []string
	if b.installed.ref && b.installed.ours != "" {
		diverted = plugins
	}
	if got := b.root.Files(refDir); !slices.Equal(got, diverted) {
		b.t.Errorf("after %s: /%s holds %q, want %q", name, refDir, got, diverted)
	}
	for _, p := range diverted {
		if got, err := os.ReadFile(b.root.Path(refDir + "/" + p)); err != nil || !bytes.Equal(got, b.refFiles[p]) {
			b.t.Errorf("after %s: /%s/%s (%v) is not the reference's", name, refDir, p, err)
		}
	}
	if _, err := os.Stat(b.root.Path(refDir)); b.installed.ours == "" && !os.IsNotExist(err) {
		b.t.Errorf("after %s: /%s: %v, want it gone with our package", name, refDir, err)
	}
	b.checkGCBin(name)
}

// checkGCBin asserts the copy of our plugins cnisuite-gc runs is in
// /usr/lib/cnisuite/bin exactly while cnisuite-tools is installed.
func (b *beside) checkGCBin(name string) {
	b.t.Helper()
	var want []string
	if b.installed.tools != "" {
		want = plugins
	}
	if got := b.root.Files(gcBin); !slices.Equal(got, want) {
		b.t.Errorf("after %s: /%s holds %q, want %q", name, gcBin, got, want)
	}
	for _, p := range want {
		if got, err := os.ReadFile(b.root.Path(gcBin + "/" + p)); err != nil || !bytes.Equal(got, b.ourFiles[b.installed.tools][p]) {
			b.t.Errorf("after %s: /%s/%s (%v) is not the one of cnisuite %s", name, gcBin, p, err, b.installed.tools)
		}
	}
	if _, err := os.Stat(b.root.Path("usr/lib/cnisuite")); b.installed.ours == "" && b.installed.tools == "" && !os.IsNotExist(err) {
		b.t.Errorf("after %s: /usr/lib/cnisuite: %v, want it gone with our packages", name, err)
	}
}

// checkOwners asserts what dpkg -S says of one of our five, of one of the
// reference's other plugins and of the tool: the diversion while ours is
// installed, and the packages that hold each path (in any order).
func (b *beside) checkOwners(name string) {
	b.t.Helper()
	var holders []string
	if b.installed.ours != "" {
		holders = append(holders, "cnisuite")
	}
	if b.installed.ref {
		holders = append(holders, debroot.Reference)
	}
	want := map[string][]string{"/usr/lib/cni/bridge": nil, "/usr/lib/cni/firewall": nil, "/usr/sbin/cnisuite-gc": nil}
	if b.installed.ours != "" {
		want["/usr/lib/cni/bridge"] = []string{"diversion by cnisuite from: /usr/lib/cni/bridge",
			"diversion by cnisuite to: /" + refDir + "/bridge"}
	}
	if len(holders) > 0 {
		want["/usr/lib/cni/bridge"] = append(want["/usr/lib/cni/bridge"], strings.Join(holders, ", ")+": /usr/lib/cni/bridge")
	}
	if b.installed.ref {
		want["/usr/lib/cni/firewall"] = []string{debroot.Reference + ": /usr/lib/cni/firewall"}
	}
	if b.installed.tools != "" {
		want["/usr/sbin/cnisuite-gc"] = []string{"cnisuite-tools: /usr/sbin/cnisuite-gc"}
	}
	for path, w := range want {
		if got := ownerLines(b.root.Owners(path)); !slices.Equal(got, w) {
			b.t.Errorf("after %s: dpkg -S %s:\n%s\nwant:\n%s", name, path, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
}

// ownerLines splits dpkg -S output into lines, the packages of each
// "a, b: path" line sorted: dpkg lists them in its database's order.
func ownerLines(out string) []string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if pkgs, path, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "diversion by ") {
			names := strings.Split(pkgs, ", ")
			slices.Sort(names)
			line = strings.Join(names, ", ") + ": " + path
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// wantDiversions are the lines of dpkg-divert --list: one per plugin of
// ours while our package is installed, none otherwise.
func (b *beside) wantDiversions() []string {
	if b.installed.ours == "" {
		return nil
	}
	var lines []string
	for _, p := range plugins {
		lines = append(lines, fmt.Sprintf("diversion of /usr/lib/cni/%s to /%s/%s by cnisuite", p, refDir, p))
	}
	slices.Sort(lines)
	return lines
}

// wantStatus fails the test unless dpkg shows pkg in status want.
func (b *beside) wantStatus(pkg, want string) {
	b.t.Helper()
	if got := b.root.Status(pkg); got != want {
		b.t.Errorf("dpkg status of %s: %q, want %q", pkg, got, want)
	}
}

// testReferenceFirst: on a node with Debian's containernetworking-plugins,
// our package installs beside it, upgrades, lets the reference upgrade
// underneath, and going back (remove, then purge) gives the node the
// reference's five again; the tools stay.
func testReferenceFirst(t *testing.T, debs map[string]debroot.Suite) {
	b := newBeside(t, debs)
	b.step("install the reference", func() { b.installRef(b.ref) })
	b.step("install ours", func() { b.installOurs(version) })
	b.step("upgrade ours", func() { b.installOurs(version2) })
	b.step("upgrade the reference", func() { b.installRef(b.refNext) })
	b.step("remove ours", b.removeOurs)
	b.wantStatus("cnisuite", "deinstall ok config-files")
	b.wantStatus("cnisuite-tools", "install ok installed")
	b.step("purge ours", func() { b.root.Purge("cnisuite") })
	b.wantStatus("cnisuite", "")
	b.wantStatus(debroot.Reference, "install ok installed")
}

// testOursFirst: ours installed first, the reference after it (as apt
// does for the Recommends), both upgraded, then ours purged at once.
func testOursFirst(t *testing.T, debs map[string]debroot.Suite) {
	b := newBeside(t, debs)
	b.step("install ours", func() { b.installOurs(version) })
	b.step("install the reference", func() { b.installRef(b.ref) })
	b.step("upgrade the reference", func() { b.installRef(b.refNext) })
	b.step("reinstall the same reference", func() { b.installRef(b.refNext) })
	b.step("upgrade ours", func() { b.installOurs(version2) })
	b.step("purge ours", func() {
		b.root.Purge("cnisuite")
		b.installed.ours = ""
	})
	b.wantStatus("cnisuite-tools", "install ok installed")
}

// testOursAlone: ours on a node without the reference satisfies what
// needs container-network-stack (podman's golang-github-containers-common
// does); removing it leaves /usr/lib/cni empty and no diversion, and the
// tools go only when purged themselves.
func testOursAlone(t *testing.T, debs map[string]debroot.Suite) {
	b := newBeside(t, debs)
	b.step("install ours", func() { b.installOurs(version) })
	common := debroot.StandIn(t, t.TempDir(), "golang-github-containers-common", "1.0", "Depends: container-network-stack")
	b.step("install what needs a network stack", func() { b.root.Install(common) })
	b.wantStatus("golang-github-containers-common", "install ok installed")
	b.step("remove what needs it, and ours", func() {
		b.root.Remove("golang-github-containers-common")
		b.removeOurs()
	})
	b.step("purge ours", func() { b.root.Purge("cnisuite") })
	b.step("purge the tools", func() {
		b.root.Purge("cnisuite-tools")
		b.installed.tools = ""
	})
}

// testFromConflicting: a node with the package as it was before it went
// beside the reference (Conflicts/Replaces containernetworking-plugins,
// cnisuite-gc in it) upgrades to ours: cnisuite-tools takes the tool over,
// nothing of the old package is diverted, and the reference can come
// back afterwards.
func testFromConflicting(t *testing.T, debs map[string]debroot.Suite) {
	b := newBeside(t, debs)
	b.root.Install(conflictingDeb(t))
	b.step("upgrade ours", func() { b.installOurs(version) })
	b.step("install the reference", func() { b.installRef(b.ref) })
	b.step("remove ours", b.removeOurs)
}

// conflictingDeb builds a stand-in of the package before this one, at a
// lower version: our five (shell scripts) in /usr/lib/cni and
// cnisuite-gc in /usr/sbin, in place of containernetworking-plugins.
func conflictingDeb(t *testing.T) string {
	tree := filepath.Join(t.TempDir(), "cnisuite-old")
	files := map[string]string{"DEBIAN/control": "Package: cnisuite\nVersion: 9.8.6\nArchitecture: all\n" +
		"Maintainer: test <test@localhost>\nConflicts: containernetworking-plugins\n" +
		"Replaces: containernetworking-plugins\nDescription: the package before it went beside\n"}
	files["usr/sbin/cnisuite-gc"] = "#!/bin/sh\necho old\n"
	for _, p := range plugins {
		files["usr/lib/cni/"+p] = "#!/bin/sh\necho old\n"
	}
	for p, content := range files {
		path := filepath.Join(tree, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(tree, "DEBIAN/control"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "", nil, "dpkg-deb", "--root-owner-group", "--build", tree, tree+".deb")
	return tree + ".deb"
}
