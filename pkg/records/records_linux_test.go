package records

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func rec(cid, ifname string) Record {
	return Record{
		Plugin: "bridge", Network: "net1", ContainerID: cid, IfName: ifname, Netns: "/run/netns/x",
		Config: json.RawMessage(`{"name":"net1","type":"bridge"}`), Result: json.RawMessage(`{"cniVersion":"1.1.0"}`),
	}
}

func TestWriteListRemove(t *testing.T) {
	s := Store{Root: filepath.Join(t.TempDir(), "records")}
	for _, r := range []Record{rec("c2", "eth0"), rec("c1", "eth0"), rec("c1", "eth0")} {
		if err := s.Write(r); err != nil {
			t.Fatalf("Write(%s): %v", r.ContainerID, err)
		}
	}
	got, err := s.List("bridge", "net1")
	if err != nil || len(got) != 2 {
		t.Fatalf("List = %d records, %v; want 2 (a second Write replaces)", len(got), err)
	}
	file := filepath.Join(s.Root, "bridge", "net1", FileName("c1", "eth0"))
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record file %s: %v, %v; want mode 0600", file, fi, err)
	}
	first, n, err := s.First("bridge", "net1")
	if err != nil || n != 2 || first.Netns != "/run/netns/x" || string(first.Result) != `{"cniVersion":"1.1.0"}` {
		t.Fatalf("First = %+v, %d, %v", first, n, err)
	}
	if nets, err := s.Networks("bridge"); err != nil || len(nets) != 1 || nets[0] != "net1" {
		t.Fatalf("Networks = %v, %v; want [net1]", nets, err)
	}
	for i := 0; i < 2; i++ { // a second Remove is success
		if err := s.Remove("bridge", "net1", "c1", "eth0"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("record of c1 still there after Remove: %v", err)
	}
	if _, n, _ := s.First("bridge", "net1"); n != 1 {
		t.Fatalf("First counts %d records after Remove, want 1", n)
	}
	if got, err := s.List("bridge", "other"); err != nil || len(got) != 0 {
		t.Fatalf("List of a network without records = %v, %v", got, err)
	}
}

func TestGC(t *testing.T) {
	s := Store{Root: t.TempDir()}
	for _, cid := range []string{"keep", "gone"} {
		if err := s.Write(rec(cid, "eth0")); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(s.Root, "bridge", "net1")
	fresh := filepath.Join(dir, ".tmp-writer")
	if err := os.WriteFile(fresh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.GC("bridge", "net1", []Attachment{{ContainerID: "keep", IfName: "eth0"}}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	got, _ := s.List("bridge", "net1")
	if len(got) != 1 || got[0].ContainerID != "keep" {
		t.Fatalf("after GC: %+v, want only keep's record", got)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("GC removed a writer's fresh temporary file: %v", err)
	}
}

func TestRefusesLinksAndBadNames(t *testing.T) {
	s := Store{Root: t.TempDir()}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(s.Root, "bridge")); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(rec("c1", "eth0")); err == nil {
		t.Fatal("Write through a planted link succeeded")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("Write followed the link: %v", entries)
	}
	bad := rec("c1", "eth0")
	bad.Network = "../x"
	if err := (Store{Root: t.TempDir()}).Write(bad); err == nil {
		t.Fatal("Write with network ../x succeeded")
	}
}

func TestUndecodableRecordReported(t *testing.T) {
	s := Store{Root: t.TempDir()}
	if err := s.Write(rec("c1", "eth0")); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(s.Root, "bridge", "net1", FileName("c2", "eth0"))
	if err := os.WriteFile(broken, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.List("bridge", "net1")
	if err == nil || len(got) != 1 {
		t.Fatalf("List = %d records, %v; want the good one and an error naming the broken one", len(got), err)
	}
}

// A DEL's Remove waits for a repair holding the record, and a repair
// that comes after it finds no record: no repair puts back the rules of
// an attachment being deleted.
func TestRemoveWaitsForRepair(t *testing.T) {
	s := Store{Root: t.TempDir()}
	if err := s.Write(rec("c1", "eth0")); err != nil {
		t.Fatal(err)
	}
	file := FileName("c1", "eth0")
	r, release, err := s.ReadLocked(context.Background(), "bridge", "net1", file)
	if err != nil || r.ContainerID != "c1" {
		t.Fatalf("ReadLocked = %+v, %v", r, err)
	}
	removed := make(chan error, 1)
	go func() { removed <- s.Remove("bridge", "net1", "c1", "eth0") }()
	select {
	case err := <-removed:
		t.Fatalf("Remove returned (%v) while a repair held the record", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := <-removed; err != nil {
		t.Fatalf("Remove after the repair: %v", err)
	}
	if _, _, err := s.ReadLocked(context.Background(), "bridge", "net1", file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadLocked after Remove = %v, want fs.ErrNotExist", err)
	}
}
