package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
	"cnisuite/test/userns"
)

// The tests run as root inside scripts/sandbox.sh (those through libcni
// start the built plugin there) or, for anyone, as root of a user namespace
// of their own (test/userns), where the commands called in this process run.
func TestMain(m *testing.M) { userns.MainOrSandbox(m) }

// call is one command's arguments for the namespace path netns.
func call(command, conf, netns string) *skel.CmdArgs {
	return &skel.CmdArgs{Command: command, ContainerID: "lo-inplace", Netns: netns, IfName: "lo", StdinData: []byte(conf)}
}

// TestInplaceVerbs: at every spec version ADD brings lo up and reports it
// with 127.0.0.1/8 and ::1/128, or passes a prevResult through; CHECK
// passes while lo is up and fails once it is down; DEL sets it down, and
// a second DEL, one without a namespace and one whose namespace is gone
// succeed; GC and STATUS have nothing to do.
func TestInplaceVerbs(t *testing.T) {
	ctx := context.Background()
	for _, v := range version.All {
		t.Run(v, func(t *testing.T) {
			n := userns.NodeNS(t)
			conf := `{"cniVersion":"` + v + `","name":"lonet","type":"loopback"}`
			res, err := cmdAdd(ctx, call("ADD", conf, n.Path()))
			if err != nil {
				t.Fatalf("ADD: %v", err)
			}
			if !loUp(t, n) {
				t.Fatal("lo is down after ADD")
			}
			var got []string
			for _, ip := range res.IPs {
				got = append(got, ip.Address.String())
			}
			if strings.Join(got, " ") != "127.0.0.1/8 ::1/128" || res.Interfaces[0].Sandbox != n.Path() {
				t.Errorf("ADD result: addresses %v in %q, want 127.0.0.1/8 ::1/128 in %q", got, res.Interfaces[0].Sandbox, n.Path())
			}
			if err := cmdCheck(ctx, call("CHECK", conf, n.Path())); err != nil {
				t.Errorf("CHECK after ADD: %v", err)
			}
			for _, verb := range []func(context.Context, *skel.CmdArgs) error{cmdGC, cmdStatus} {
				if err := verb(ctx, call("GC", conf, "")); err != nil {
					t.Errorf("GC/STATUS: %v", err)
				}
			}
			if err := cmdDel(ctx, call("DEL", conf, n.Path())); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			if loUp(t, n) {
				t.Error("lo is up after DEL")
			}
			if err := cmdCheck(ctx, call("CHECK", conf, n.Path())); err == nil || !strings.Contains(err.Error(), "lo in "+n.Path()+" is down") {
				t.Errorf("CHECK with lo down = %v, want it said down", err)
			}
			for _, netns := range []string{n.Path(), "", filepath.Join(t.TempDir(), "gone")} {
				if err := cmdDel(ctx, call("DEL", conf, netns)); err != nil {
					t.Errorf("DEL with netns %q: %v", netns, err)
				}
			}
		})
	}
}

// TestInplaceChained: after another plugin ADD brings lo up and returns
// that plugin's result unchanged.
func TestInplaceChained(t *testing.T) {
	n := userns.NodeNS(t)
	conf := `{"cniVersion":"1.1.0","name":"lonet","type":"loopback",
		"prevResult":{"cniVersion":"1.1.0","interfaces":[{"name":"eth0"}],"ips":[{"address":"10.9.0.2/24","interface":0}]}}`
	res, err := cmdAdd(context.Background(), call("ADD", conf, n.Path()))
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if !loUp(t, n) {
		t.Error("lo is down after a chained ADD")
	}
	if len(res.IPs) != 1 || res.IPs[0].Address.String() != "10.9.0.2/24" || res.Interfaces[0].Name != "eth0" {
		t.Errorf("chained ADD result = %+v, want the prevResult's eth0 10.9.0.2/24", res)
	}
}

// TestInplaceRefusals: a configuration that cannot be read (code 6), CNI_ARGS
// that cannot (4) and a namespace that is not there (4) are refused.
func TestInplaceRefusals(t *testing.T) {
	ctx := context.Background()
	good := `{"cniVersion":"1.1.0","name":"lonet","type":"loopback"}`
	gone := filepath.Join(t.TempDir(), "gone")
	bad := call("ADD", good, gone)
	bad.Args = "IgnoreUnknown=maybe"
	tests := []struct {
		name string
		err  error
		code uint
	}{
		{"ADD_bad_json", func() error { _, err := cmdAdd(ctx, call("ADD", `{"cniVersion":`, gone)); return err }(), types.CodeDecoding},
		{"ADD_bad_args", func() error { _, err := cmdAdd(ctx, bad); return err }(), types.CodeInvalidEnv},
		{"ADD_netns_gone", func() error { _, err := cmdAdd(ctx, call("ADD", good, gone)); return err }(), types.CodeInvalidEnv},
		{"CHECK_netns_gone", cmdCheck(ctx, call("CHECK", good, gone)), types.CodeInvalidEnv},
		{"DEL_bad_json", cmdDel(ctx, call("DEL", `[]`, gone)), types.CodeDecoding},
		{"GC_bad_json", cmdGC(ctx, call("GC", `{`, "")), types.CodeDecoding},
	}
	for _, tt := range tests {
		if tt.err == nil || types.Code(tt.err) != tt.code {
			t.Errorf("%s: %v (code %d), want code %d", tt.name, tt.err, types.Code(tt.err), tt.code)
		}
	}
}
