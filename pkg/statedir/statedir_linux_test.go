package statedir

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// victim is a directory outside the state directory, with a file, that a
// planted link points at; untouched reports what changed in it.
type victim struct{ dir, file string }

func newVictim(t *testing.T) victim {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	return victim{dir: dir, file: file}
}

func (v victim) check(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(v.file)
	if err != nil || string(data) != "keep" {
		t.Errorf("victim file %s = %q, %v; want %q untouched", v.file, data, err, "keep")
	}
	fi, err := os.Stat(v.dir)
	if err != nil || fi.Mode().Perm()|fi.Mode()&fs.ModeSticky != 0o777|fs.ModeSticky {
		t.Errorf("victim directory mode = %v, %v; want drwxrwxrwt untouched", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(v.dir)
	if len(entries) != 1 {
		t.Errorf("victim directory holds %d entries, want only its file", len(entries))
	}
}

func openRoot(t *testing.T) (*Dir, string) {
	t.Helper()
	path := t.TempDir()
	d, err := OpenRoot(path, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, path
}

// Every operation on a name where a link was planted refuses with ErrLink
// and the link's target is left as it was.
func TestPlantedLinkRefused(t *testing.T) {
	ops := map[string]func(d *Dir, name string) error{
		"Sub":       func(d *Dir, n string) error { _, err := d.Sub(n, true, 0o700); return err },
		"ReadFile":  func(d *Dir, n string) error { _, err := d.ReadFile(n); return err },
		"Overwrite": func(d *Dir, n string) error { return d.Overwrite(n, []byte("x")) },
		"CreateNew": func(d *Dir, n string) error { return d.CreateNew(n, []byte("x")) },
		"Truncate":  func(d *Dir, n string) error { return d.Truncate(n, 0) },
		"RemoveAll": func(d *Dir, n string) error { return d.RemoveAll(n) },
		"OpenFile":  func(d *Dir, n string) error { _, err := d.OpenFile(n, unix.O_RDONLY|unix.O_CREAT, 0o600); return err },
	}
	for _, target := range []string{"dir", "file"} {
		for name, op := range ops {
			t.Run(target+"/"+name, func(t *testing.T) {
				v := newVictim(t)
				d, path := openRoot(t)
				to := v.dir
				if target == "file" {
					to = v.file
				}
				if err := os.Symlink(to, filepath.Join(path, "planted")); err != nil {
					t.Fatal(err)
				}
				err := op(d, "planted")
				if name == "CreateNew" {
					// O_EXCL never follows a link: the name exists.
					if !errors.Is(err, fs.ErrExist) {
						t.Errorf("CreateNew(link) = %v, want exists", err)
					}
				} else if !errors.Is(err, ErrLink) || !strings.Contains(err.Error(), "planted") || !strings.Contains(err.Error(), to) {
					t.Errorf("%s(link to %s) = %v, want ErrLink naming the link and its target", name, target, err)
				}
				v.check(t)
			})
		}
	}
}

// RemoveAll removes links inside the tree themselves, never what they
// point to.
func TestRemoveAllKeepsLinkTargets(t *testing.T) {
	v := newVictim(t)
	d, path := openRoot(t)
	tree := filepath.Join(path, "tree", "sub")
	if err := os.MkdirAll(tree, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"dirlink": v.dir, "filelink": v.file} {
		if err := os.Symlink(to, filepath.Join(tree, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveAll("tree"); err != nil {
		t.Fatalf("RemoveAll = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(path, "tree")); !os.IsNotExist(err) {
		t.Errorf("tree still there: %v", err)
	}
	v.check(t)
	if err := d.RemoveAll("absent"); err != nil {
		t.Errorf("RemoveAll(absent) = %v, want nil", err)
	}
}

// A directory that exists keeps its mode; one that Sub creates gets perm.
func TestSubKeepsMode(t *testing.T) {
	d, path := openRoot(t)
	shared := filepath.Join(path, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{"shared": 0o777 | fs.ModeSticky, "new": 0o700} {
		sub, err := d.Sub(name, true, 0o700)
		if err != nil {
			t.Fatalf("Sub(%s) = %v", name, err)
		}
		sub.Close()
		fi, err := os.Stat(filepath.Join(path, name))
		if err != nil || fi.Mode()&(fs.ModePerm|fs.ModeSticky) != want {
			t.Errorf("mode of %s = %v, %v; want %v", name, fi.Mode(), err, want)
		}
	}
	if _, err := d.Sub("missing", false, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sub(missing, no create) = %v, want not exist", err)
	}
}

// A FIFO planted under a file's name neither hangs a read nor takes a
// write.
func TestPlantedFIFO(t *testing.T) {
	d, path := openRoot(t)
	if err := syscall.Mkfifo(filepath.Join(path, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := d.ReadFile("fifo"); err == nil && len(data) > 0 {
		t.Errorf("ReadFile(fifo) = %q", data)
	}
	if err := d.Overwrite("fifo", []byte("x")); err == nil {
		t.Error("Overwrite(fifo) = nil, want a refusal")
	}
}

func TestReadFileSizes(t *testing.T) {
	d, path := openRoot(t)
	for _, size := range []int{0, 1, 511, 512, 513, 1023, 1024, 5000, 70000} {
		want := bytes.Repeat([]byte("x"), size)
		if err := os.WriteFile(filepath.Join(path, "f"), want, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := d.ReadFile("f"); err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadFile(%d bytes) = %d bytes, %v", size, len(got), err)
		}
	}
	if _, err := d.ReadFile("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want not exist", err)
	}
	for _, bad := range []string{"", ".", "..", "a/b"} {
		if _, err := d.ReadFile(bad); err == nil {
			t.Errorf("ReadFile(%q) = nil error, want a refusal", bad)
		}
	}
}

// ReadFileMax reads a file of up to its limit and refuses a larger one,
// naming it, without reading it whole; ReadFile's limit is MaxFileSize.
func TestReadFileMax(t *testing.T) {
	d, path := openRoot(t)
	for _, size := range []int{0, 100, 1000} {
		if err := os.WriteFile(filepath.Join(path, "f"), bytes.Repeat([]byte("x"), size), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := d.ReadFileMax("f", 1000); err != nil || len(got) != size {
			t.Errorf("ReadFileMax(%d bytes, 1000) = %d bytes, %v", size, len(got), err)
		}
		_, err := d.ReadFileMax("f", 99)
		if tooLarge := size > 99; errors.Is(err, ErrTooLarge) != tooLarge || tooLarge && !strings.Contains(err.Error(), filepath.Join(path, "f")) {
			t.Errorf("ReadFileMax(%d bytes, 99) = %v; want ErrTooLarge naming the file: %v", size, err, tooLarge)
		}
	}
	// A sparse file the size of a bound past the limit: refused from its
	// size, before its bytes are read.
	f, err := os.Create(filepath.Join(path, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := d.ReadFile("huge"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile(MaxFileSize+1 bytes) = %v, want ErrTooLarge", err)
	}
	lf, err := d.OpenFile("huge", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if _, err := ReadAllMax(lf, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadAllMax(past its limit) = %v, want ErrTooLarge", err)
	}
}

func TestEmpty(t *testing.T) {
	d, err := OpenRoot(t.TempDir(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dots := func(name string) bool { return strings.HasPrefix(name, ".") }
	check := func(what string, ignore func(string) bool, want bool) {
		t.Helper()
		got, err := d.Empty(ignore)
		if err != nil || got != want {
			t.Errorf("%s: Empty() = %v, %v; want %v", what, got, err, want)
		}
	}
	check("new directory", nil, true)
	if err := d.CreateNew(".lock", nil); err != nil {
		t.Fatal(err)
	}
	check("a dot file, nothing ignored", nil, false)
	check("a dot file, dot files ignored", dots, true)
	// Many ignored entries with long names, more than one read's worth,
	// then one that counts: Empty reads on until it finds it.
	for i := 0; i < 200; i++ {
		if err := d.CreateNew("."+strings.Repeat("x", 200)+strconv.Itoa(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	check("200 ignored entries", dots, true)
	if err := d.CreateNew(strings.Repeat("y", 255), nil); err != nil {
		t.Fatal(err)
	}
	check("200 ignored entries and one of the longest name", dots, false)
}
