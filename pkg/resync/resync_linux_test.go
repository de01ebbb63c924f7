package resync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"cnisuite/pkg/records"
	"cnisuite/test/sandbox"
)

func write(t *testing.T, s records.Store, plugin, network, cid, netns string) records.Record {
	t.Helper()
	r := records.Record{Plugin: plugin, Network: network, ContainerID: cid, IfName: "eth0", Netns: netns,
		Config: json.RawMessage(`{"name":"` + network + `","type":"` + plugin + `"}`)}
	if err := s.Write(r); err != nil {
		t.Fatal(err)
	}
	r.File = records.FileName(cid, "eth0")
	return r
}

// Serve runs the plugin's repair on each live record, marks a record whose
// netns is gone stale without repairing it, and reports errors per record.
func TestServe(t *testing.T) {
	s := records.Store{Root: t.TempDir()}
	live := write(t, s, "bridge", "net1", "live", "/proc/self/ns/net")
	broken := write(t, s, "bridge", "net1", "broken", "")
	gone := write(t, s, "bridge", "net1", "gone", "/nonexistent/netns")
	var mu sync.Mutex
	var repaired []string
	repair := func(_ context.Context, r records.Record, dryRun bool) ([]string, error) {
		mu.Lock()
		repaired = append(repaired, r.ContainerID)
		mu.Unlock()
		if r.ContainerID == "broken" {
			return nil, errors.New("no backend")
		}
		if dryRun {
			t.Error("repair got a dry run, want a real one")
		}
		return []string{"firewall rules"}, nil
	}
	// A record listed and then removed by a DEL is no failure: left out.
	q := Request{Root: s.Root, Records: []string{"net1/" + live.File, "net1/" + broken.File, "net1/" + gone.File,
		"net1/" + records.FileName("deleted", "eth0"), "net1/notarecord"}}
	var out bytes.Buffer
	if err := Serve(context.Background(), "bridge", q.Args(), &out, repair); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	sort.Strings(repaired)
	if strings.Join(repaired, " ") != "broken live" {
		t.Errorf("repaired %v, want live and broken (gone is stale)", repaired)
	}
	var got []Outcome
	dec := json.NewDecoder(&out)
	for dec.More() {
		var o Outcome
		if err := dec.Decode(&o); err != nil {
			t.Fatal(err)
		}
		got = append(got, o)
	}
	if len(got) != 4 || !got[0].Repaired || got[1].Error != "no backend" || !got[2].Stale || got[3].Error == "" {
		t.Errorf("outcomes = %+v; want live repaired, broken failed, gone stale, a bad name failed", got)
	}
}

// standIn is a stand-in plugin: one outcome per record argument, the
// first repaired, the others intact; "fail" in a network name fails.
const standIn = `#!/bin/sh
[ "$1 $2" = "--cnisuite-helper cnisuite-repair" ] || exit 9
[ -n "$PATH" ] || exit 8
shift 4
first=1
for r in "$@"; do
  [ "$r" = "-n" ] && continue
  net=${r%%/*}
  case $net in
  fail*) echo '{"plugin":"bridge","network":"'$net'","containerID":"c","ifName":"eth0","error":"boom"}' ;;
  *) if [ $first = 1 ]; then m='"missing":["firewall rules"],"repaired":true'; else m='"repaired":false'; fi
     echo '{"plugin":"bridge","network":"'$net'","containerID":"c","ifName":"eth0",'$m'}'; first=0 ;;
  esac
done
`

// writeScript writes an executable script at path.
func writeScript(t *testing.T, path, script string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// anyScript lets a stand-in script pass for our plugin.
func anyScript(string, string) error { return nil }

// Run finds each record's plugin by its type in the plugin directories,
// runs each once as a helper with PATH in its environment, prints one line
// per network and fails when an attachment failed.
func TestRun(t *testing.T) {
	root := t.TempDir()
	s := records.Store{Root: filepath.Join(root, "records")}
	bin := filepath.Join(root, "bin")
	writeScript(t, filepath.Join(bin, "bridge"), standIn)
	write(t, s, "bridge", "a", "c1", "")
	write(t, s, "bridge", "a", "c2", "")
	write(t, s, "bridge", "b", "c1", "")
	var out bytes.Buffer
	o := Options{Root: s.Root, BinDirs: []string{filepath.Join(root, "empty"), bin}, ours: anyScript}
	outs, err := Run(context.Background(), o, &out)
	if err != nil || len(outs) != 3 {
		t.Fatalf("Run = %d outcomes, %v\n%s", len(outs), err, out.String())
	}
	want := "a: 2 attachments: 1 intact, 1 repaired (firewall rules of bridge), 0 stale, 0 failed\n" +
		"b: 1 attachments: 1 intact, 0 repaired, 0 stale, 0 failed\n"
	if out.String() != want {
		t.Errorf("Run printed\n%s\nwant\n%s", out.String(), want)
	}
	write(t, s, "bridge", "fail1", "c1", "")
	out.Reset()
	o.DryRun = true
	if _, err := Run(context.Background(), o, &out); !errors.Is(err, ErrFailed) ||
		!strings.Contains(out.String(), "fail1: 1 attachments: 0 intact, 0 to repair, 0 stale, 1 failed") {
		t.Errorf("Run with a failing attachment = %v\n%s", err, out.String())
	}
}

// Records are data: the binary a record names is never run, whatever it
// says, and neither is a plugin its type names that is not ours or not
// in the plugin directories; such a record is skipped and reported by
// its file, and the others are repaired. Before, resync ran the record's
// "binary" as root.
func TestRunRecordsAreData(t *testing.T) {
	root := t.TempDir()
	s := records.Store{Root: filepath.Join(root, "records")}
	bin := filepath.Join(root, "bin")
	ranPlanted := filepath.Join(root, "planted-ran")
	planted := filepath.Join(root, "elsewhere", "bridge")
	writeScript(t, planted, "#!/bin/sh\n: >"+ranPlanted+"\n")
	writeScript(t, filepath.Join(bin, "bridge"), standIn)
	writeScript(t, filepath.Join(bin, "firewall"), "#!/bin/sh\n: >"+ranPlanted+"\n")
	// A good record that names a binary, as a planted one would (the
	// releases before issue 42 wrote and ran it), and planted records:
	// another type in the plugin directory, a type that is a path, a
	// binary and no type.
	plant := func(network, cid, config string) string {
		dir := filepath.Join(s.Root, "bridge", network)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, records.FileName(cid, "eth0"))
		data := `{"plugin":"bridge","network":"` + network + `","containerID":"` + cid + `","ifName":"eth0","binary":"` + planted + `","config":` + config + `}`
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	plant("good", "c1", `{"name":"good","type":"bridge"}`)
	foreign := plant("good", "c2", `{"name":"good","type":"firewall"}`)
	path := plant("good", "c3", `{"name":"good","type":"`+planted+`"}`)
	untyped := plant("good", "c4", `{"name":"good"}`)
	ours := func(path, plugin string) error {
		if filepath.Base(path) != plugin {
			return errNotOurs
		}
		return nil
	}
	var out bytes.Buffer
	outs, err := Run(context.Background(), Options{Root: s.Root, BinDirs: []string{bin}, ours: ours}, &out)
	if _, e := os.Stat(ranPlanted); e == nil {
		t.Fatal("Run ran a program a record named")
	}
	for _, f := range []string{path, untyped} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Run's error does not name the bad record %s: %v", f, err)
		}
	}
	if err == nil || !strings.Contains(err.Error(), `plugin type "firewall"`) || !strings.Contains(err.Error(), "c2") {
		t.Errorf("Run's error does not name %s's type firewall: %v", foreign, err)
	}
	if len(outs) != 4 || !strings.Contains(out.String(), "good: 4 attachments: 0 intact, 1 repaired (firewall rules of bridge), 0 stale, 3 failed") {
		t.Errorf("Run = %d outcomes\n%s; want the good record repaired, three failed", len(outs), out.String())
	}
}

// ourPlugin tells cnisuite's plugins from other programs of the same name
// without running them.
func TestOurPlugin(t *testing.T) {
	bin := sandbox.Bin(t)
	if err := ourPlugin(filepath.Join(bin, "bridge"), "bridge"); err != nil {
		t.Errorf("ourPlugin(bridge): %v", err)
	}
	if err := ourPlugin(filepath.Join(bin, "portmap"), "bridge"); !errors.Is(err, errNotOurs) {
		t.Errorf("ourPlugin(portmap as bridge) = %v, want errNotOurs", err)
	}
	script := filepath.Join(t.TempDir(), "bridge")
	writeScript(t, script, "#!/bin/sh\n")
	if err := ourPlugin(script, "bridge"); err == nil {
		t.Error("ourPlugin(a shell script) = nil, want a refusal")
	}
	loose := filepath.Join(t.TempDir(), "bridge")
	data, err := os.ReadFile(filepath.Join(bin, "bridge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loose, data, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := ourPlugin(loose, "bridge"); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Errorf("ourPlugin(a bridge anyone can write) = %v, want a refusal", err)
	}
}

func TestParseArgsRefuses(t *testing.T) {
	for _, args := range [][]string{{"-root"}, {"net1"}, {"a/b/c"}} {
		if _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q) succeeded", args)
		}
	}
}
