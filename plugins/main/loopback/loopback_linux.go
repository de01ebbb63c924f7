package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"

	"cnisuite/pkg/linkops"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
)

const loName = "lo"

func parseConfig(a *skel.CmdArgs) (*types.NetConf, error) {
	var conf types.NetConf
	if err := types.Decode(a.StdinData, &conf); err != nil {
		return nil, err
	}
	if _, err := types.ParseArgs(a.Args); err != nil {
		return nil, err
	}
	return &conf, nil
}

// cmdAdd brings lo up and reports it with its addresses.
// Equivalent to: ip netns exec $CNI_NETNS ip link set lo up
func cmdAdd(_ context.Context, a *skel.CmdArgs) (*types.Result, error) {
	conf, err := parseConfig(a)
	if err != nil {
		return nil, err
	}
	prev, err := conf.PrevResult()
	if err != nil {
		return nil, err
	}
	var addrs []netlink.Addr
	err = ns.Do(a.Netns, func() error {
		addrs, err = setUp(linkops.Netlink{})
		return err
	})
	if err != nil {
		return nil, ns.CNIError(a.Netns, err)
	}
	if prev != nil {
		// Chained after another plugin: pass its result through.
		return prev, nil
	}
	return loopbackResult(a.Netns, addrs), nil
}

// setUp brings lo up and returns its addresses.
func setUp(links linkops.Links) ([]netlink.Addr, error) {
	lo, err := links.Get(loName)
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", loName, err)
	}
	if err := links.SetUp(lo, true); err != nil {
		return nil, err
	}
	return links.Addrs(lo, netlink.FAMILY_ALL)
}

func loopbackResult(sandbox string, addrs []netlink.Addr) *types.Result {
	r := &types.Result{Interfaces: []*types.Interface{{Name: loName, Mac: "00:00:00:00:00:00", Sandbox: sandbox}}}
	for _, want := range []string{"127.0.0.1/8", "::1/128"} {
		w, _ := types.ParseCIDR(want)
		for _, a := range addrs {
			if a.IPNet.IP.Equal(w.IP) {
				r.IPs = append(r.IPs, &types.IPConfig{Interface: types.Ptr(0), Address: *w})
			}
		}
	}
	return r
}

// cmdCheck verifies that lo is up.
func cmdCheck(_ context.Context, a *skel.CmdArgs) error {
	if _, err := parseConfig(a); err != nil {
		return err
	}
	err := ns.Do(a.Netns, func() error { return checkUp(linkops.Netlink{}, a.Netns) })
	return ns.CNIError(a.Netns, err)
}

// checkUp fails when lo (in the namespace netns) is down.
func checkUp(links linkops.Links, netns string) error {
	lo, err := links.Get(loName)
	if err != nil {
		return fmt.Errorf("find %s: %w", loName, err)
	}
	if !lo.Up {
		return fmt.Errorf("%s in %s is down", loName, netns)
	}
	return nil
}

// cmdDel sets lo down; a namespace that is gone already is success.
func cmdDel(_ context.Context, a *skel.CmdArgs) error {
	if _, err := parseConfig(a); err != nil {
		return err
	}
	if a.Netns == "" {
		return nil
	}
	err := ns.Do(a.Netns, func() error { return setDown(linkops.Netlink{}) })
	if errors.Is(err, ns.ErrNotExist) {
		return nil
	}
	return ns.CNIError(a.Netns, err)
}

// setDown sets lo down.
func setDown(links linkops.Links) error {
	lo, err := links.Get(loName)
	if err != nil {
		return fmt.Errorf("find %s: %w", loName, err)
	}
	return links.SetUp(lo, false)
}

// cmdGC has nothing to collect: loopback keeps no state outside the
// container's namespace, which the runtime removes.
func cmdGC(_ context.Context, a *skel.CmdArgs) error {
	_, err := parseConfig(a)
	return err
}

// cmdStatus is always ready: bringing lo up needs nothing from the node.
func cmdStatus(_ context.Context, a *skel.CmdArgs) error {
	_, err := parseConfig(a)
	return err
}
