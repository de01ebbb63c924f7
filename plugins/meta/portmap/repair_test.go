package main

import (
	"context"
	"strings"
	"testing"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/records"
	"cnisuite/pkg/types"
)

// A reset of the firewall (simulated by removing the attachment's rules
// behind the plugin's back): STATUS turns 51 naming the network and the
// mappings, repair puts the same rules back and says what it did, STATUS
// is 0 again, a second repair finds nothing missing, DEL removes the
// record and STATUS stays 0 without attachments.
func TestRecordStatusRepair(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	h.host.localnetOn = true
	status := `{"cniVersion":"1.1.0","name":"net1","type":"portmap"}`
	// A netns that exists: STATUS leaves an attachment whose netns is
	// gone to GC.
	if _, e := h.run(t, "ADD", conf(maps), "CNI_NETNS=/proc/self/ns/net", "CNI_NETNS_OVERRIDE=1"); e != nil {
		t.Fatalf("ADD: %+v", e)
	}
	want := h.fw.Dump()
	store := records.Store{Root: h.records}
	recs, err := store.List(firewall.PluginPortmap, "net1")
	if err != nil || len(recs) != 1 || recs[0].ContainerID != "ctr1" || recs[0].Netns != "/proc/self/ns/net" {
		t.Fatalf("records after ADD = %+v, %v; want ctr1's", recs, err)
	}
	if _, e := h.run(t, "STATUS", status); e != nil {
		t.Fatalf("STATUS with rules in place: %+v", e)
	}
	ctx := context.Background()
	o := firewall.Owner{Plugin: firewall.PluginPortmap, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
	if err := h.fw.Remove(ctx, o); err != nil {
		t.Fatal(err)
	}
	h.host.localnetOn = false
	_, e := h.run(t, "STATUS", status)
	if e == nil || e.Code != types.CodeLimitedConnectivity || !strings.Contains(e.Msg, `"net1"`) ||
		!strings.Contains(e.Msg, "port mappings") || !strings.Contains(e.Msg, "route_localnet") {
		t.Fatalf("STATUS after the reset = %+v, want code 51 naming net1, the port mappings and route_localnet", e)
	}
	p := &plugin{host: h.host, records: store, newBackend: func(context.Context, string) (firewall.Backend, error) { return h.fw, nil }}
	missing, err := p.repair(ctx, recs[0], true)
	if err != nil || len(missing) != 2 || h.fw.Dump() != "" {
		t.Fatalf("dry-run repair = %v, %v, rules %q; want both missing and nothing written", missing, err, h.fw.Dump())
	}
	h.host.localnet = nil
	if missing, err = p.repair(ctx, recs[0], false); err != nil || len(missing) != 2 {
		t.Fatalf("repair = %v, %v; want both missing, repaired", missing, err)
	}
	if got := h.fw.Dump(); got != want {
		t.Errorf("rules after repair:\n%s\nwant those of ADD:\n%s", got, want)
	}
	if len(h.host.localnet) != 1 {
		t.Errorf("repair set route_localnet %v times, want once", h.host.localnet)
	}
	h.host.localnetOn = true
	calls := len(h.fw.Calls())
	if missing, err = p.repair(ctx, recs[0], false); err != nil || len(missing) != 0 {
		t.Errorf("second repair = %v, %v; want nothing missing", missing, err)
	}
	for _, c := range h.fw.Calls()[calls:] {
		if !strings.HasPrefix(c, "check") {
			t.Errorf("second repair changed the firewall: %s", c)
		}
	}
	if _, e := h.run(t, "STATUS", status); e != nil {
		t.Errorf("STATUS after repair: %+v", e)
	}
	if _, e := h.run(t, "DEL", conf(maps)); e != nil {
		t.Fatalf("DEL: %+v", e)
	}
	if recs, _ := store.List(firewall.PluginPortmap, "net1"); len(recs) != 0 {
		t.Errorf("records after DEL: %+v", recs)
	}
}

// GC drops the records of attachments the runtime does not list.
func TestGCRecords(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	for _, id := range []string{"a", "b"} {
		if _, e := h.run(t, "ADD", conf(maps), "CNI_CONTAINERID="+id); e != nil {
			t.Fatalf("ADD %s: %+v", id, e)
		}
	}
	gc := `{"cniVersion":"1.1.0","name":"net1","type":"portmap","cni.dev/valid-attachments":[{"containerID":"b","ifname":"eth0"}]}`
	if _, e := h.run(t, "GC", gc); e != nil {
		t.Fatalf("GC: %+v", e)
	}
	recs, err := records.Store{Root: h.records}.List(firewall.PluginPortmap, "net1")
	if err != nil || len(recs) != 1 || recs[0].ContainerID != "b" {
		t.Errorf("records after GC = %+v, %v; want only b's", recs, err)
	}
}

// An attachment whose netns is gone (a pod that died without DEL) is GC's
// business: STATUS does not call its missing rules lost connectivity.
func TestStatusIgnoresGoneNetns(t *testing.T) {
	h := newHarness(firewall.KindNFTables)
	if _, e := h.run(t, "ADD", conf(maps)); e != nil { // CNI_NETNS=/nonexistent/netns
		t.Fatalf("ADD: %+v", e)
	}
	o := firewall.Owner{Plugin: firewall.PluginPortmap, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
	if err := h.fw.Remove(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, e := h.run(t, "STATUS", `{"cniVersion":"1.1.0","name":"net1","type":"portmap"}`); e != nil {
		t.Errorf("STATUS with the only attachment's netns gone = %+v, want success", e)
	}
}
