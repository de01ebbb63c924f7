package main

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/sysctlkeep"
	"cnisuite/test/sandbox"
)

// A host port another container holds, on the backend that can tell
// (nftables keeps host ports in maps with unique keys): ADD fails with code
// 11, the holder keeps its mapping, and the refused ADD keeps no hold of
// route_localnet (it set that beside the rules).
func TestHostPortHeldIsCode11(t *testing.T) {
	sandbox.Require(t)
	enableForwarding(t)
	n := newPMNet(t, "1.0.0", firewall.KindNFTables, "pmbrcf", 75)
	holder := n.add("ctr-holder", mapping(8095, 80, "tcp", ""))
	defer n.del(holder)
	rc := &libcni.RuntimeConf{ContainerID: "ctr-second", IfName: "eth0", NetNS: sandbox.NewNS(t).Path(),
		CapabilityArgs: map[string]any{"portMappings": []map[string]any{mapping(8095, 80, "tcp", "")}}}
	_, err := n.rt.AddNetworkList(context.Background(), n.list, rc)
	defer n.rt.DelNetworkList(context.Background(), n.list, rc)
	var cniErr *cnitypes.Error
	if !errors.As(err, &cniErr) || cniErr.Code != 11 {
		t.Fatalf("ADD of a second container on host port 8095 = %v, want a CNI error with code 11", err)
	}
	if got, err := ask(nil, "tcp", net.ParseIP("127.0.0.1"), 8095); err != nil || got != "ctr-holder" {
		t.Errorf("after the refused ADD, host port 8095 answers %q, %v; want the holder", got, err)
	}
	holds, err := filepath.Glob(filepath.Join(sysctlkeep.HoldsDir, "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	second := sysctlkeep.Holder("portmap", "pm-pmbrcf", "ctr-second", "eth0")
	first := sysctlkeep.Holder("portmap", "pm-pmbrcf", "ctr-holder", "eth0")
	var holders []string
	for _, h := range holds {
		holders = append(holders, filepath.Base(h))
	}
	if slices.Contains(holders, second) || !slices.Contains(holders, first) {
		t.Errorf("sysctl holders after the refused ADD: %q; want the holder's (%s), not the refused one's (%s)", holders, first, second)
	}
}
