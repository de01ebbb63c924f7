package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/records"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
)

// GC of an attachment a repair holds (it read the record and is checking
// the rules) waits for the repair's lock; while it is held for GC's whole
// wait, GC ends with code 11 and leaves the record and the rules (the
// repair may be putting them back), and the next GC removes both. Before,
// GC removed the record without its lock and then the rules, under the
// repair's feet.
func TestGCWaitsForRepair(t *testing.T) {
	const conf = `{"cniVersion":"1.1.0","name":"net1","type":"bridge","macspoofchk":true,"cni.dev/valid-attachments":[]}`
	fw := firewall.NewFake(firewall.KindNFTables)
	store := records.Store{Root: t.TempDir()}
	p := &plugin{records: store, newRules: func(context.Context, string) (firewall.Backend, error) { return fw, nil }}
	ctx := context.Background()
	o := firewall.Owner{Plugin: firewall.PluginBridge, Network: "net1", ContainerID: "ctr1", IfName: "eth0"}
	mac, _ := net.ParseMAC("0a:58:0a:16:00:05")
	if err := fw.Ensure(ctx, o, firewall.Rules{SpoofCheck: &firewall.SpoofCheck{HostIface: "veth01234567", MAC: mac}}); err != nil {
		t.Fatal(err)
	}
	if err := store.Write(records.Record{Plugin: firewall.PluginBridge, Network: "net1", ContainerID: "ctr1", IfName: "eth0",
		Config: json.RawMessage(`{"name":"net1","type":"bridge"}`)}); err != nil {
		t.Fatal(err)
	}
	file := records.FileName("ctr1", "eth0")
	_, release, err := store.ReadLocked(ctx, firewall.PluginBridge, "net1", file)
	if err != nil {
		t.Fatal(err)
	}
	a := &skel.CmdArgs{StdinData: []byte(conf), Stderr: io.Discard}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := p.cmdGC(short, a); types.Code(err) != types.CodeTryAgain {
		t.Errorf("GC while a repair holds the record = %v, want code 11", err)
	}
	_, recErr := store.Read(firewall.PluginBridge, "net1", file)
	if recErr != nil || fw.Dump() == "" {
		t.Errorf("after a GC that could not lock the record: record %v, rules %q; want both there", recErr, fw.Dump())
	}
	release()
	if err := p.cmdGC(ctx, a); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if _, err := store.Read(firewall.PluginBridge, "net1", file); err == nil || fw.Dump() != "" {
		t.Errorf("after GC: record %v, rules %q; want both gone", err, fw.Dump())
	}
}
