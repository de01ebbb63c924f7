package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnisuite/pkg/statedir"
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

// GC removes the records of attachments not kept and the temporary files
// a killed ADD of them left (named after the record); a kept
// attachment's temporary file stays.
func TestGC(t *testing.T) {
	s := Store{Root: t.TempDir()}
	for _, cid := range []string{"keep", "gone"} {
		if err := s.Write(rec(cid, "eth0")); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(s.Root, "bridge", "net1")
	keptTmp := filepath.Join(dir, tmpPrefix+FileName("keep", "eth0"))
	killedTmp := filepath.Join(dir, tmpPrefix+FileName("killed", "eth0"))
	for _, f := range []string{keptTmp, killedTmp} {
		if err := os.WriteFile(f, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dropped, err := s.GC(context.Background(), "bridge", "net1", []Attachment{{ContainerID: "keep", IfName: "eth0"}})
	if err != nil || len(dropped) != 1 || dropped[0] != (Attachment{ContainerID: "gone", IfName: "eth0"}) {
		t.Fatalf("GC = %+v, %v; want gone's attachment dropped", dropped, err)
	}
	got, _ := s.List("bridge", "net1")
	if len(got) != 1 || got[0].ContainerID != "keep" {
		t.Fatalf("after GC: %+v, want only keep's record", got)
	}
	for f, want := range map[string]bool{keptTmp: true, killedTmp: false} {
		if _, err := os.Stat(f); (err == nil) != want {
			t.Errorf("after GC, %s: %v; want it there: %v", f, err, want)
		}
	}
}

// The temporary file a killed ADD left (named after its record) is
// removed by the attachment's next ADD (Write) or DEL (Remove).
func TestTmpOfKilledAdd(t *testing.T) {
	s := Store{Root: t.TempDir()}
	if err := s.Write(rec("other", "eth0")); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(s.Root, "bridge", "net1", tmpPrefix+FileName("c1", "eth0"))
	plant := func() {
		if err := os.WriteFile(tmp, []byte(`{"half`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	plant()
	if err := s.Write(rec("c1", "eth0")); err != nil {
		t.Fatalf("Write over a killed ADD's temporary file: %v", err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("after Write, the temporary file: %v; want it gone", err)
	}
	plant()
	if err := s.Remove("bridge", "net1", "c1", "eth0"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("after Remove, the temporary file: %v; want it gone", err)
	}
	if got, err := s.List("bridge", "net1"); err != nil || len(got) != 1 {
		t.Errorf("List = %+v, %v; want other's record alone", got, err)
	}
}

// GC, like DEL's Remove, waits for a repair holding a record: one that
// stays held for GC's whole wait stays, with ErrBusy (its caller then
// keeps the rules too), and goes at the next GC.
func TestGCWaitsForRepair(t *testing.T) {
	s := Store{Root: t.TempDir()}
	if err := s.Write(rec("c1", "eth0")); err != nil {
		t.Fatal(err)
	}
	file := FileName("c1", "eth0")
	_, release, err := s.ReadLocked(context.Background(), "bridge", "net1", file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.GC(ctx, "bridge", "net1", nil); !errors.Is(err, ErrBusy) {
		t.Errorf("GC while a repair holds the record = %v, want ErrBusy", err)
	}
	if _, err := s.Read("bridge", "net1", file); err != nil {
		t.Errorf("record after a GC that could not lock it: %v; want it there", err)
	}
	release()
	if _, err := s.GC(context.Background(), "bridge", "net1", nil); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if _, _, err := s.ReadLocked(context.Background(), "bridge", "net1", file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadLocked after GC = %v, want fs.ErrNotExist", err)
	}
}

// A record file past MaxRecordSize is refused, naming it, without being
// read whole; the others are read. Write refuses to make one.
func TestRecordSizeLimit(t *testing.T) {
	s := Store{Root: t.TempDir()}
	if err := s.Write(rec("c1", "eth0")); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(s.Root, "bridge", "net1", FileName("c0", "eth0"))
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(512 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	got, err := s.List("bridge", "net1")
	if len(got) != 1 || !errors.Is(err, statedir.ErrTooLarge) || !strings.Contains(err.Error(), huge) {
		t.Errorf("List = %d records, %v; want c1's, and an error naming %s as too large", len(got), err, huge)
	}
	if r, n, err := s.First("bridge", "net1"); r.ContainerID != "c1" || n != 2 || err != nil {
		t.Errorf("First = %s, %d, %v; want c1's record of 2", r.ContainerID, n, err)
	}
	if _, _, err := s.ReadLocked(context.Background(), "bridge", "net1", FileName("c0", "eth0")); !errors.Is(err, statedir.ErrTooLarge) {
		t.Errorf("ReadLocked(too large) = %v, want ErrTooLarge", err)
	}
	big := rec("c2", "eth0")
	big.Config = json.RawMessage(`{"name":"net1","type":"bridge","x":"` + strings.Repeat("x", MaxRecordSize) + `"}`)
	if err := s.Write(big); err == nil {
		t.Error("Write of a record past MaxRecordSize succeeded")
	}
}

// A record is checked before use; each fault is an error naming the file
// and the key at fault, and the record is left out.
func TestRecordValidated(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"another network's", `{"plugin":"bridge","network":"net2","containerID":"c1","ifName":"eth0","config":{"name":"net1","type":"bridge"}}`, `network "net2"`},
		{"another plugin's", `{"plugin":"portmap","network":"net1","containerID":"c1","ifName":"eth0","config":{"name":"net1","type":"bridge"}}`, `plugin "portmap"`},
		{"another attachment's file", `{"plugin":"bridge","network":"net1","containerID":"c2","ifName":"eth0","config":{"name":"net1","type":"bridge"}}`, `containerID "c2"`},
		{"bad container ID", `{"plugin":"bridge","network":"net1","containerID":"../x","ifName":"eth0","config":{"name":"net1","type":"bridge"}}`, `CNI_CONTAINERID "../x"`},
		{"null config", `{"plugin":"bridge","network":"net1","containerID":"c1","ifName":"eth0","config":null}`, "config: not a JSON object"},
		{"no config", `{"plugin":"bridge","network":"net1","containerID":"c1","ifName":"eth0"}`, "config: not a JSON object"},
		{"type is a path", `{"plugin":"bridge","network":"net1","containerID":"c1","ifName":"eth0","config":{"name":"net1","type":"/tmp/x"}}`, `config type "/tmp/x"`},
		{"type missing", `{"plugin":"bridge","network":"net1","containerID":"c1","ifName":"eth0","config":{"name":"net1"}}`, `config type ""`},
		{"config of another network", `{"plugin":"bridge","network":"net1","containerID":"c1","ifName":"eth0","config":{"name":"x","type":"bridge"}}`, `config name "x"`},
		{"relative netns", `{"plugin":"bridge","network":"net1","containerID":"c1","ifName":"eth0","netns":"x","config":{"name":"net1","type":"bridge"}}`, `netns "x"`},
		{"result not an object", `{"plugin":"bridge","network":"net1","containerID":"c1","ifName":"eth0","result":[],"config":{"name":"net1","type":"bridge"}}`, "result: not a JSON object"},
		{"not JSON", `{"plugin":`, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Store{Root: t.TempDir()}
			if err := s.Write(rec("c0", "eth0")); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(s.Root, "bridge", "net1", FileName("c1", "eth0"))
			if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := s.List("bridge", "net1")
			if len(got) != 1 || got[0].ContainerID != "c0" || err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("List = %d records, %v; want c0's and an error naming %s and %s", len(got), err, file, tc.want)
			}
		})
	}
	// A good record that names a binary, as a planted one would: its type
	// is read, and nothing holds the binary.
	s := Store{Root: t.TempDir()}
	if err := s.Write(rec("c1", "eth0")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(s.Root, "bridge", "net1", FileName("c1", "eth0"))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data = append([]byte(`{"binary":"/tmp/planted",`), data[1:]...)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read("bridge", "net1", FileName("c1", "eth0"))
	if err != nil || got.Type != "bridge" || strings.Contains(fmt.Sprintf("%+v", got), "/tmp/planted") {
		t.Errorf("Read = %+v, %v; want type bridge and no binary", got, err)
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
