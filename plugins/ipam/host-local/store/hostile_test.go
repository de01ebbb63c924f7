package store

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/pkg/statedir"
)

// A victim is what a planted link points at: a directory outside the data
// directory holding a file and a subdirectory named like the network,
// which is what the index rebuild used to delete through a linked
// .host-local-index2.
type victim struct{ dir string }

func newVictim(t *testing.T) victim {
	t.Helper()
	v := victim{dir: t.TempDir()}
	writeRef(t, filepath.Join(v.dir, "net"), map[string]string{"data": "keep"})
	writeRef(t, v.dir, map[string]string{"data": "keep", ".stamp": "keep", "net.1": "keep"})
	return v
}

func (v victim) intact(t *testing.T) {
	t.Helper()
	for _, f := range []string{"data", "net/data", ".stamp", "net.1"} {
		data, err := os.ReadFile(filepath.Join(v.dir, f))
		if err != nil || string(data) != "keep" {
			t.Errorf("victim %s = %q, %v; want it untouched", f, data, err)
		}
	}
	entries, _ := os.ReadDir(v.dir)
	if len(entries) != 4 {
		t.Errorf("victim directory holds %d entries, want its 4", len(entries))
	}
}

// Links planted anywhere in the data directory are never followed: an ADD
// (lock, reserve, commit) and a DEL (lock, release) leave the link's target
// as it was, and an error names the link. Each row fails on a store that
// opens paths (the first is the reported repro: the rebuild deleted
// <victim>/net recursively).
func TestPlantedLinksNeverFollowed(t *testing.T) {
	for _, planted := range []struct{ path, to string }{
		{".host-local-index2", ""},
		{".host-local-index2/net", ""},
		{".host-local-index2/net/.spare", "data"},
		{".host-local-index2/net/.stamp", ".stamp"},
		{".host-local-boot", ""},
		{".host-local-boot/net", "data"},
		{"net", ""},
		{"net/lock", "data"},
		{"net/.lease.tmp", "data"},
		{"net/last_reserved_ip.0.swap", "data"},
		{"net/last_reserved_ip.0", "data"},
		{"net/10.0.0.2", "data"},
	} {
		t.Run(strings.ReplaceAll(planted.path, "/", "_"), func(t *testing.T) {
			v := newVictim(t)
			dataDir := t.TempDir()
			link := filepath.Join(dataDir, planted.path)
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(v.dir, planted.to), link); err != nil {
				t.Fatal(err)
			}
			for _, step := range []func(*Store) error{addOne, delOne} {
				err := lockedStep(dataDir, step)
				if err != nil && !errors.Is(err, statedir.ErrLink) {
					t.Errorf("with %s planted: %v, want success or a refusal naming the link", planted.path, err)
				}
				v.intact(t)
			}
		})
	}
}

func lockedStep(dataDir string, step func(*Store) error) error {
	s, err := Open(dataDir, "net")
	if err != nil {
		return err
	}
	if err := s.Lock(context.Background()); err != nil {
		return err
	}
	return errors.Join(step(s), s.Unlock())
}

func addOne(s *Store) error {
	_, err := s.Reserve(a("c1", "eth0"), net.ParseIP("10.0.0.3"), 0)
	return err
}

func delOne(s *Store) error {
	ips, err := s.Leases(a("c1", "eth0"))
	for _, ip := range ips {
		err = errors.Join(err, s.Release(ip))
	}
	return err
}

// A directory of the data directory that the store did not create keeps
// its mode (a shared, sticky one stays so).
func TestExistingDirectoriesKeepTheirMode(t *testing.T) {
	dataDir := t.TempDir()
	for _, d := range []string{"net", ".host-local-index2", ".host-local-boot"} {
		if err := os.Mkdir(filepath.Join(dataDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dataDir, d), 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}
	if err := lockedStep(dataDir, addOne); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"net", ".host-local-index2", ".host-local-boot"} {
		fi, err := os.Stat(filepath.Join(dataDir, d))
		if err != nil || fi.Mode()&(os.ModePerm|os.ModeSticky) != 0o777|os.ModeSticky {
			t.Errorf("mode of %s = %v, %v; want it kept", d, fi.Mode(), err)
		}
	}
}
