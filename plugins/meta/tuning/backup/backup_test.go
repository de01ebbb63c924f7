package backup

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unicode/utf8"

	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
	"cnisuite/plugins/meta/tuning/ethconf"
)

func TestStoreSaveLoadRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tuning")
	store := Store{Dir: dir}
	on := true
	st := &State{Network: "net", MAC: "02:00:00:00:00:01", Promisc: &on, MTU: 1500,
		Sysctl: []Setting{{"net/ipv4/conf/eth0/rp_filter", "2"}}}
	if err := store.Save("ctr1", "eth0", st); err != nil {
		t.Fatalf("Save: %v", err)
	}
	assertMode(t, dir, 0o700|os.ModeDir)
	assertMode(t, filepath.Join(dir, "ctr1_eth0.json"), 0o600)
	got, err := store.Load("ctr1", "eth0")
	if err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("Load = %+v, %v; want %+v", got, err, st)
	}
	if err := store.Remove("ctr1", "eth0"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if got, err := store.Load("ctr1", "eth0"); got != nil || err != nil {
		t.Fatalf("Load after Remove = %+v, %v; want nil, nil", got, err)
	}
	if err := store.Remove("ctr1", "eth0"); err != nil {
		t.Fatalf("second Remove = %v, want nil", err)
	}
}

// A state directory that exists keeps its mode, whether it is shared
// (1777) or reached through a link in the configured path: the store never
// chmods a directory it did not create.
func TestStoreKeepsDirMode(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(t.TempDir(), "tuning")
	if err := os.Symlink(shared, linked); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{shared, linked} {
		if err := (Store{Dir: dir}).Save("c", "eth0", &State{}); err != nil {
			t.Fatalf("Save: %v", err)
		}
		assertMode(t, shared, 0o777|os.ModeSticky|os.ModeDir)
	}
}

// A link planted under a state file's name is never read or written
// through: Load refuses it naming it, Save replaces the link itself, and
// the file it pointed at keeps its content.
func TestStorePlantedLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte(`{"mtu":9000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "c_eth0.json")); err != nil {
		t.Fatal(err)
	}
	store := Store{Dir: dir}
	if _, err := store.Load("c", "eth0"); !errors.Is(err, statedir.ErrLink) {
		t.Errorf("Load(planted link) = %v, want a refusal naming the link", err)
	}
	if err := store.Save("c", "eth0", &State{MTU: 1400}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if data, _ := os.ReadFile(victim); string(data) != `{"mtu":9000}` {
		t.Errorf("the link's target was written through: %q", data)
	}
	if got, err := store.Load("c", "eth0"); err != nil || got.MTU != 1400 {
		t.Errorf("Load after Save = %+v, %v; want the saved state", got, err)
	}
}

func TestStoreReadsReferenceBackup(t *testing.T) {
	dir := t.TempDir()
	ref := `{"mac":"02:00:00:00:00:05","promisc":false,"mtu":1450,"allmulti":true,"txQLen":500}`
	if err := os.WriteFile(filepath.Join(dir, "abc_net1.json"), []byte(ref), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Store{Dir: dir}.Load("abc", "net1")
	if err != nil {
		t.Fatal(err)
	}
	if got.MAC != "02:00:00:00:00:05" || got.MTU != 1450 || *got.Promisc || !*got.Allmulti || *got.TxQLen != 500 {
		t.Errorf("Load(reference backup) = %+v", got)
	}
}

func TestStoreRefusesUnsafeNames(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	for _, tc := range []struct{ id, ifName string }{{"../x", "eth0"}, {"c", "../../etc"}, {"c", "a/b"}, {"", "eth0"}} {
		if err := store.Save(tc.id, tc.ifName, &State{}); err == nil {
			t.Errorf("Save(%q, %q) = nil, want an error", tc.id, tc.ifName)
		}
		if _, err := store.Load(tc.id, tc.ifName); err == nil {
			t.Errorf("Load(%q, %q) = nil error, want one", tc.id, tc.ifName)
		}
	}
}

func TestStoreGC(t *testing.T) {
	dir := t.TempDir()
	store := Store{Dir: dir}
	for _, f := range []struct{ id, ifName, network string }{
		{"keep", "eth0", "net"}, {"gone", "eth0", "net"}, {"keep", "eth1", "net"},
		{"other", "eth0", "othernet"}, {"legacy", "eth0", ""},
	} {
		if err := store.Save(f.id, f.ifName, &State{Network: f.network}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	keep := []types.Attachment{{ContainerID: "keep", IfName: "eth0"}}
	if err := store.GC("net", keep); err != nil {
		t.Fatalf("GC: %v", err)
	}
	want := []string{"keep_eth0.json", "legacy_eth0.json", "notes.txt", "other_eth0.json"}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after GC: %v, want %v", got, want)
	}
	if err := (Store{Dir: filepath.Join(dir, "missing")}).GC("net", nil); err != nil {
		t.Errorf("GC of a missing directory = %v, want nil", err)
	}
}

func TestStateMerge(t *testing.T) {
	off, on := false, true
	old := &State{MAC: "02:00:00:00:00:01", Promisc: &off, Sysctl: []Setting{{"net/a", "1"}}}
	newer := &State{MAC: "02:00:00:00:00:02", Promisc: &on, MTU: 1500, Sysctl: []Setting{{"net/a", "9"}, {"net/b", "2"}}}
	old.Merge(newer)
	want := &State{MAC: "02:00:00:00:00:01", Promisc: &off, MTU: 1500, Sysctl: []Setting{{"net/a", "1"}, {"net/b", "2"}}}
	if !reflect.DeepEqual(old, want) {
		t.Errorf("Merge = %+v, want %+v", old, want)
	}
}

func TestStoreLoadCorrupt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c_eth0.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Store{Dir: dir}).Load("c", "eth0"); !errors.Is(err, types.ErrDecoding) {
		t.Errorf("Load(corrupt) = %v, want a decoding error", err)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Errorf("mode of %s = %v, want %v", path, fi.Mode(), want)
	}
}

// FuzzStateRoundTrip: what Save writes, Load reads back as it was
// (strings that are not UTF-8 come back with U+FFFD, as encoding/json
// writes them).
func FuzzStateRoundTrip(f *testing.F) {
	f.Add("net", "0a:58:0a:58:00:05", 1500, 1000, true, "net.ipv4.conf.eth0.rp_filter", "1", false)
	f.Add("<&>", "", 0, -1, false, "\u2028", "\xff", true)
	f.Fuzz(func(t *testing.T, network, mac string, mtu, txq int, promisc bool, key, value string, features bool) {
		st := &State{Network: network, MAC: mac, MTU: mtu, Promisc: &promisc, TxQLen: &txq,
			Sysctl: []Setting{{Path: key, Value: value}, {Path: value, Value: key}}}
		if features {
			st.Features = map[string]bool{key: promisc}
			st.Allmulti, st.TxQLen, st.Sysctl = &promisc, nil, nil
		}
		for _, s := range []string{network, mac, key, value} {
			if !utf8.ValidString(s) {
				return
			}
		}
		store := Store{Dir: t.TempDir()}
		if err := store.Save("c", "eth0", st); err != nil {
			t.Fatal(err)
		}
		back, err := store.Load("c", "eth0")
		if err != nil || !reflect.DeepEqual(back, st) {
			t.Fatalf("%+v read back as %+v, %v", st, back, err)
		}
	})
}

// TestStateMergeEthtool: a second ADD keeps the first's originals and adds
// what only it changed; a state file without the new keys still loads.
func TestStateMergeEthtool(t *testing.T) {
	u := func(n uint32) *uint32 { return &n }
	old := &State{Features: map[string]bool{"rx-gro": false}, Channels: &ethconf.ChannelState{RX: u(4)}}
	old.Merge(&State{Features: map[string]bool{"rx-gro": true, "tx-checksum-sctp": true}, Channels: &ethconf.ChannelState{RX: u(2), TX: u(4)}})
	want := &State{Features: map[string]bool{"rx-gro": false, "tx-checksum-sctp": true}, Channels: &ethconf.ChannelState{RX: u(4), TX: u(4)}}
	if !reflect.DeepEqual(old, want) {
		t.Errorf("Merge = %+v, want %+v", old, want)
	}
	var st State
	if err := json.Unmarshal([]byte(`{"mtu":1500,"promisc":false}`), &st); err != nil || st.Features != nil || st.Channels != nil {
		t.Errorf("an older state file decodes to %+v, %v", st, err)
	}
}
