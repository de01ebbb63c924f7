package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/records"
	"cnisuite/pkg/resync"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
)

// The interleavings of a repair or STATUS with a GC or DEL of the same
// attachment, made deterministic: the repair function resync hands the
// record to is the pause point, and the other call runs inside it, at
// the moment the repair has read the record and not yet checked the
// rules (the window of issue 42).

// interleaveGC is GC's configuration keeping no attachment of net1.
const interleaveGC = `{"cniVersion":"1.1.0","name":"net1","type":"portmap","cni.dev/valid-attachments":[]}`

// addLive adds ctr1 with a netns that exists (a repair leaves an
// attachment whose netns is gone to GC) and returns the plugin the
// harness runs and the attachment's record file.
func addLive(t *testing.T, h *harness) (*plugin, string) {
	t.Helper()
	if _, e := h.run(t, "ADD", conf(maps), "CNI_NETNS=/proc/self/ns/net", "CNI_NETNS_OVERRIDE=1"); e != nil {
		t.Fatalf("ADD: %+v", e)
	}
	p := &plugin{host: h.host, records: records.Store{Root: h.records},
		newBackend: func(context.Context, string) (firewall.Backend, error) { return h.fw, nil }}
	return p, records.FileName("ctr1", "eth0")
}

// ctr1Owner owns ctr1's rules.
var ctr1Owner = firewall.Owner{Plugin: firewall.PluginPortmap, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}

// pauseOnce returns a repair function that runs during, on its first
// call only, then repair.
func pauseOnce(during func(), repair resync.RepairFunc) resync.RepairFunc {
	paused := false
	return func(ctx context.Context, r records.Record, dryRun bool) ([]string, error) {
		if !paused {
			paused = true
			during()
		}
		return repair(ctx, r, dryRun)
	}
}

// A GC dropping an attachment while a repair of it has read its record
// (and a reset took its rules): GC waits for the repair's lock. Here the
// repair holds it for GC's whole wait, so GC ends with code 11 and
// removes neither the record nor the rules; the repair then puts the
// rules back, of an attachment whose record is still there, and the next
// GC removes both. Before, GC removed the rules and the record at once
// and the repair put the rules of a dropped pod back, for good.
func TestGCDuringRepair(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	h.host.localnetOn = true
	p, file := addLive(t, h)
	ctx := context.Background()
	if err := h.fw.Remove(ctx, ctr1Owner); err != nil {
		t.Fatal(err)
	}
	gcArgs := &skel.CmdArgs{StdinData: []byte(interleaveGC), Stderr: io.Discard}
	var gcErr error
	gc := func() {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		gcErr = p.GC(short, gcArgs)
	}
	q := resync.Request{Root: h.records, Records: []string{"net1/" + file}}
	var out bytes.Buffer
	if err := resync.Serve(ctx, firewall.PluginPortmap, q.Args(), &out, pauseOnce(gc, p.repair)); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if types.Code(gcErr) != types.CodeTryAgain {
		t.Errorf("GC while the repair held the record = %v, want code 11", gcErr)
	}
	_, recErr := p.records.Read(firewall.PluginPortmap, "net1", file)
	if rules := h.fw.Dump(); rules != "" && recErr != nil {
		t.Fatalf("after GC and the repair: rules of a dropped attachment without its record (%v):\n%s", recErr, rules)
	}
	if err := p.GC(ctx, gcArgs); err != nil {
		t.Fatalf("second GC: %v", err)
	}
	if _, err := p.records.Read(firewall.PluginPortmap, "net1", file); err == nil || h.fw.Dump() != "" {
		t.Errorf("after the second GC: record %v, rules %q; want both gone", err, h.fw.Dump())
	}
}

// gcOrder is the harness's backend, whose GC looks at the records first.
type gcOrder struct {
	firewall.Backend
	atGC func()
}

func (g gcOrder) GC(ctx context.Context, plugin, network string, keep []firewall.Owner) error {
	g.atGC()
	return g.Backend.GC(ctx, plugin, network, keep)
}

// GC removes a dropped attachment's record before its rules: by the time
// the backend's GC runs, no repair can read the record any more.
func TestGCRemovesRecordsFirst(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	p, file := addLive(t, h)
	var recErr error
	called := false
	p.newBackend = func(context.Context, string) (firewall.Backend, error) {
		return gcOrder{Backend: h.fw, atGC: func() {
			called = true
			_, recErr = p.records.Read(firewall.PluginPortmap, "net1", file)
		}}, nil
	}
	if err := p.GC(context.Background(), &skel.CmdArgs{StdinData: []byte(interleaveGC), Stderr: io.Discard}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if !called || recErr == nil {
		t.Errorf("when GC removed the rules (called %v), the record could still be read (%v); want it gone first", called, recErr)
	}
	if h.fw.Dump() != "" {
		t.Errorf("rules after GC:\n%s", h.fw.Dump())
	}
}

// STATUS that read the network's first record just before the pod's DEL
// (which removes the record, then the rules) finds the rules gone: it
// asks the record again, under its lock, before it answers 51, and
// answers 0. Before, it answered 51 and the node went NotReady. A reset
// at the same moment, which takes the rules of an attachment that stays,
// is still 51.
func TestStatusInterleaved(t *testing.T) {
	for _, tc := range []struct {
		name string
		// between runs between STATUS's read and its check.
		between func(t *testing.T, h *harness, p *plugin)
		want    uint
	}{
		{"DEL", func(t *testing.T, h *harness, p *plugin) {
			a := &skel.CmdArgs{ContainerID: "ctr1", IfName: "eth0", Netns: "/proc/self/ns/net", StdinData: []byte(conf(maps)), Stderr: io.Discard}
			if err := p.Del(context.Background(), a); err != nil || h.fw.Dump() != "" {
				t.Errorf("DEL = %v, rules left %q", err, h.fw.Dump())
			}
		}, 0},
		{"reset", func(t *testing.T, h *harness, p *plugin) {
			if err := h.fw.Remove(context.Background(), ctr1Owner); err != nil {
				t.Error(err)
			}
		}, types.CodeLimitedConnectivity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(firewall.KindNFTables)
			h.host.localnetOn = true
			p, _ := addLive(t, h)
			between := func() { tc.between(t, h, p) }
			err := resync.Status(context.Background(), p.records, firewall.PluginPortmap, "net1", pauseOnce(between, p.repair))
			var code uint // 0: success
			if err != nil {
				code = types.Code(err)
			}
			if code != tc.want {
				t.Errorf("STATUS with a %s between its read and its check = %v, want code %d", tc.name, err, tc.want)
			}
		})
	}
}

// The race itself, as a node has it: a repair and a GC of the same
// attachment started together, many times. Whatever order they take,
// the rules of the dropped attachment never outlive its record (the
// deterministic interleavings above prove the order; this shows no other
// one slips through).
func TestGCRepairRace(t *testing.T) {
	ctx := context.Background()
	gcArgs := &skel.CmdArgs{StdinData: []byte(interleaveGC), Stderr: io.Discard}
	for i := 0; i < 100; i++ {
		h := newHarness(firewall.KindNFTables)
		h.host.localnetOn = true
		p, file := addLive(t, h)
		if err := h.fw.Remove(ctx, ctr1Owner); err != nil {
			t.Fatal(err)
		}
		q := resync.Request{Root: h.records, Records: []string{"net1/" + file}}
		done := make(chan error, 2)
		go func() { done <- resync.Serve(ctx, firewall.PluginPortmap, q.Args(), io.Discard, p.repair) }()
		go func() { done <- p.GC(ctx, gcArgs) }()
		for range 2 {
			if err := <-done; err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
		}
		if _, err := p.records.Read(firewall.PluginPortmap, "net1", file); err == nil || h.fw.Dump() != "" {
			t.Fatalf("run %d: after the repair and GC: record %v, rules\n%s\nwant both gone", i, err, h.fw.Dump())
		}
	}
}
