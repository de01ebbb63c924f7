package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/ifconf"
	"cnisuite/pkg/records"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/sysctl"
	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
)

// The attachment's record (pkg/records) and its repair (pkg/resync): ADD
// records its input and result; cnisuite resync runs repair, and STATUS
// runs it as a dry run on one attachment of the network (resync.Status).

// writeRecord records what a repair of the attachment needs. The result
// is kept at the newest version: it lists the interfaces the spoof check
// and the isolation rules name, whatever version the runtime asked for.
func (at *attach) writeRecord() error {
	res, err := at.res.Encode(version.Current)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	exe, _ := os.Executable() // without it, cnisuite resync -bindir finds the plugin
	a := at.args
	err = at.p.records.Write(records.Record{
		Plugin: firewall.PluginBridge, Network: at.conf.Name, ContainerID: a.ContainerID, IfName: a.IfName,
		Netns: a.Netns, Args: a.Args, Config: a.StdinData, Result: res, Binary: exe,
	})
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	return nil
}

// repair puts back the attachment's firewall rules and forwarding sysctls
// when they are gone (all of them unless dryRun) and says what was gone.
// The rules are built by desiredRules, as ADD builds them, and installed
// by the backend's Ensure only when its Check finds one missing.
func (p *plugin) repair(ctx context.Context, r records.Record, dryRun bool) ([]string, error) {
	a := &skel.CmdArgs{ContainerID: r.ContainerID, IfName: r.IfName, Args: r.Args, StdinData: r.Config, Stderr: io.Discard}
	conf, err := loadConf(a.StdinData, a.Args)
	if err != nil {
		return nil, err
	}
	res, err := types.DecodeResult(r.Result, version.Current)
	if err != nil {
		return nil, fmt.Errorf("record's result: %w", err)
	}
	at, err := p.open(conf, a, false) // the node's side only
	if err != nil {
		return nil, err
	}
	defer at.close()
	at.res = res
	missing, err := at.repairRules(ctx, dryRun)
	if err != nil {
		return missing, err
	}
	lost, err := at.repairForwarding(dryRun)
	return append(missing, lost...), err
}

func (at *attach) repairRules(ctx context.Context, dryRun bool) ([]string, error) {
	rules, err := at.desiredRules()
	if err != nil || rules.Masq == nil && rules.SpoofCheck == nil && rules.Isolation == nil {
		return nil, err
	}
	fw, err := at.rules(ctx)
	if err != nil {
		return nil, err
	}
	err = fw.Check(ctx, at.owner(), rules)
	if err == nil || !errors.Is(err, firewall.ErrMissing) {
		return nil, err
	}
	if dryRun {
		return []string{"firewall rules"}, nil
	}
	if err := fw.Ensure(ctx, at.owner(), rules); err != nil {
		return []string{"firewall rules"}, fmt.Errorf("ipMasq/macspoofchk/icc/isolate rules: %w", err)
	}
	return []string{"firewall rules"}, nil
}

// repairForwarding turns forwarding on again for the families of the
// gateways, as enableGateway does, and holds it again.
func (at *attach) repairForwarding(dryRun bool) ([]string, error) {
	v4, v6 := at.gatewayFamilies()
	var missing []string
	for _, k := range []struct {
		on  bool
		key string
	}{{v4, "net/ipv4/ip_forward"}, {v6, "net/ipv6/conf/all/forwarding"}} {
		if v, err := sysctl.Get(k.key); k.on && (err != nil || v != "1") {
			missing = append(missing, "net."+dotted(k.key[len("net/"):]))
		}
	}
	if dryRun || len(missing) == 0 {
		return missing, nil
	}
	if err := ifconf.EnableForwarding(v4, v6); err != nil {
		return missing, err
	}
	return missing, at.keepForwarding(v4, v6)
}

// gatewayFamilies reports which families have a gateway on the bridge.
func (at *attach) gatewayFamilies() (v4, v6 bool) {
	if !at.conf.IsGW || !at.conf.hasIPAM() {
		return false, false
	}
	for _, ip := range at.res.IPs {
		if ip.Gateway != nil {
			v4, v6 = v4 || ip.Gateway.To4() != nil, v6 || ip.Gateway.To4() == nil
		}
	}
	return v4, v6
}

func dotted(key string) string {
	b := []byte(key)
	for i, c := range b {
		if c == '/' {
			b[i] = '.'
		}
	}
	return string(b)
}
