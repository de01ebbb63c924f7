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
)

func write(t *testing.T, s records.Store, plugin, network, cid, netns, bin string) records.Record {
	t.Helper()
	r := records.Record{Plugin: plugin, Network: network, ContainerID: cid, IfName: "eth0", Netns: netns,
		Config: json.RawMessage(`{"name":"` + network + `"}`), Binary: bin}
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
	live := write(t, s, "bridge", "net1", "live", "/proc/self/ns/net", "")
	broken := write(t, s, "bridge", "net1", "broken", "", "")
	gone := write(t, s, "bridge", "net1", "gone", "/nonexistent/netns", "")
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

// Run groups records by the binary that wrote them, runs each once as a
// helper with PATH in its environment, prints one line per network and
// fails when an attachment failed.
func TestRun(t *testing.T) {
	root := t.TempDir()
	s := records.Store{Root: filepath.Join(root, "records")}
	// A stand-in plugin: one outcome per record argument, the first
	// repaired, the others intact; "fail" in a network name fails.
	plugin := filepath.Join(root, "bridge")
	script := `#!/bin/sh
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
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, s, "bridge", "a", "c1", "", plugin)
	write(t, s, "bridge", "a", "c2", "", plugin)
	write(t, s, "bridge", "b", "c1", "", plugin)
	var out bytes.Buffer
	outs, err := Run(context.Background(), Options{Root: s.Root}, &out)
	if err != nil || len(outs) != 3 {
		t.Fatalf("Run = %d outcomes, %v\n%s", len(outs), err, out.String())
	}
	want := "a: 2 attachments: 1 intact, 1 repaired (firewall rules of bridge), 0 stale, 0 failed\n" +
		"b: 1 attachments: 1 intact, 0 repaired, 0 stale, 0 failed\n"
	if out.String() != want {
		t.Errorf("Run printed\n%s\nwant\n%s", out.String(), want)
	}
	write(t, s, "bridge", "fail1", "c1", "", plugin)
	out.Reset()
	if _, err := Run(context.Background(), Options{Root: s.Root, DryRun: true}, &out); !errors.Is(err, ErrFailed) ||
		!strings.Contains(out.String(), "fail1: 1 attachments: 0 intact, 0 to repair, 0 stale, 1 failed") {
		t.Errorf("Run with a failing attachment = %v\n%s", err, out.String())
	}
}

func TestParseArgsRefuses(t *testing.T) {
	for _, args := range [][]string{{"-root"}, {"net1"}, {"a/b/c"}} {
		if _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q) succeeded", args)
		}
	}
}
