package main

import (
	"context"
	"testing"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/ipmath"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/plugins/main/bridge/bridgeconf"
	"cnisuite/test/golden"
)

// fakeAttach returns an attachment with a finished dual-stack result whose
// firewall is fw.
func fakeAttach(t *testing.T, conf string, fw *firewall.Fake) *attach {
	t.Helper()
	c, err := bridgeconf.Load([]byte(conf), "")
	if err != nil {
		t.Fatal(err)
	}
	p := &plugin{newRules: func(context.Context, string) (firewall.Backend, error) { return fw, nil }}
	v4, _ := types.ParseCIDR("10.22.0.5/24")
	v6, _ := types.ParseCIDR("fd00:22::5/64")
	res := &types.Result{
		Interfaces: []*types.Interface{{Name: "cni0"}, {Name: "veth01234567"}, {Name: "eth0", Mac: "0a:58:0a:16:00:05", Sandbox: "/run/netns/x"}},
		IPs: []*types.IPConfig{
			{Interface: types.Ptr(2), Address: *v4, Gateway: ipmath.FirstHost(*v4)},
			{Interface: types.Ptr(2), Address: *v6, Gateway: ipmath.FirstHost(*v6)},
		},
	}
	return &attach{p: p, conf: c, args: &skel.CmdArgs{ContainerID: "ctr1", IfName: "eth0"}, res: res}
}

func TestFirewallRulesGolden(t *testing.T) {
	confs := map[string]string{
		"masq":        `{"cniVersion":"1.0.0","name":"l3net","ipMasq":true,"ipam":{"type":"host-local"}}`,
		"spoofcheck":  `{"cniVersion":"1.0.0","name":"l3net","macspoofchk":true,"ipam":{"type":"host-local"}}`,
		"both":        `{"cniVersion":"1.0.0","name":"l3net","ipMasq":true,"macspoofchk":true,"ipam":{"type":"host-local"}}`,
		"icc_isolate": `{"cniVersion":"1.0.0","name":"l3net","ipMasq":true,"icc":false,"isolate":true,"ipam":{"type":"host-local"}}`,
		"ingress":     `{"cniVersion":"1.0.0","name":"l3net","ipMasq":true,"ingressFilter":true,"ipam":{"type":"host-local"}}`,
	}
	for name, conf := range confs {
		for _, kind := range []string{firewall.KindNFTables, firewall.KindIPTables} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				fw := firewall.NewFake(kind)
				at := fakeAttach(t, conf, fw)
				ctx := context.Background()
				if err := installDesired(at, ctx); err != nil {
					t.Fatalf("firewall() = %v", err)
				}
				golden.Check(t, name+"."+kind, fw.Dump())
				if err := at.checkRules(ctx); err != nil {
					t.Errorf("checkRules() after ADD = %v", err)
				}
				if err := at.removeRules(ctx); err != nil {
					t.Fatalf("removeRules() = %v", err)
				}
				if d := fw.Dump(); d != "" {
					t.Errorf("rules left after DEL:\n%s", d)
				}
				if err := at.checkRules(ctx); err == nil {
					t.Errorf("checkRules() after DEL = nil, want an error")
				}
			})
		}
	}
}

func TestFirewallUndoOnFailedAdd(t *testing.T) {
	fw := firewall.NewFake(firewall.KindNFTables)
	at := fakeAttach(t, `{"cniVersion":"1.0.0","name":"n","ipMasq":true,"ipam":{"type":"host-local"}}`, fw)
	if err := installDesired(at, context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := at.undo.Run(); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if d := fw.Dump(); d != "" {
		t.Errorf("rules left after a failed ADD:\n%s", d)
	}
}

func TestFirewallNotAskedFor(t *testing.T) {
	fw := firewall.NewFake(firewall.KindNFTables)
	at := fakeAttach(t, `{"cniVersion":"1.0.0","name":"n","ipam":{"type":"host-local"}}`, fw)
	ctx := context.Background()
	if err := errorsJoin(installDesired(at, ctx), at.removeRules(ctx), at.checkRules(ctx)); err != nil {
		t.Fatal(err)
	}
	if calls := fw.Calls(); len(calls) != 0 {
		t.Errorf("firewall calls without ipMasq or macspoofchk: %v", calls)
	}
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// installDesired installs the rules the attachment's configuration and
// result ask for, as ADD's firewall step does.
func installDesired(at *attach, ctx context.Context) error {
	r, err := at.desiredRules()
	if err != nil {
		return err
	}
	return at.installRules(ctx, r)
}
