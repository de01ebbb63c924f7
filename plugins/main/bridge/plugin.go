package main

import (
	"context"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnisuite/pkg/calllog"
	"cnisuite/pkg/firewall"
	"cnisuite/pkg/link"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/records"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/pkg/undo"
	"cnisuite/plugins/main/bridge/bridgeconf"
)

// plugin holds what the commands depend on beyond their arguments.
type plugin struct {
	// newRules returns the firewall for a backend ("" = automatic choice,
	// made once per call).
	newRules func(ctx context.Context, backend string) (firewall.Backend, error)
	// portTimeout bounds the wait for the host port to forward.
	portTimeout time.Duration
	// records keeps the attachments' records (pkg/records).
	records records.Store
}

// traceEnv names the environment variable that makes the plugin print how
// long each step of a command took to stderr (see README, "Speed").
const traceEnv = "CNISUITE_BRIDGE_TRACE"

// attach is one attachment being worked on by a command.
type attach struct {
	p     *plugin
	conf  *bridgeconf.NetConf
	args  *skel.CmdArgs
	netns *ns.NetNS // nil when CNI_NETNS is empty or gone (DEL)
	host  *netlink.Handle
	cont  *netlink.Handle  // nil with netns
	fw    firewall.Backend // nil until needed
	undo  undo.Stack
	res   *types.Result
	br    *netlink.Bridge
	// hostLink is the host veth as last read (ADD).
	hostLink netlink.Link
	tm       *calllog.StepTimer // nil unless tracing
	// steps are ADD's: the attachment itself but in tests.
	steps addSteps
}

// open opens the netns (when given) and the netlink handles. For ADD and
// CHECK a missing netns is an error; for DEL it is not.
func (p *plugin) open(conf *bridgeconf.NetConf, a *skel.CmdArgs, needNetns bool) (*attach, error) {
	at := &attach{p: p, conf: conf, args: a, tm: a.StepTimer(traceEnv, "bridge")}
	at.steps = at
	defer at.tm.Step("open")()
	var err error
	// Route sockets only: the plugin needs no others, and each socket in the
	// container costs two namespace switches.
	if at.host, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
		return nil, fmt.Errorf("opening a netlink socket: %w", err)
	}
	if a.Netns == "" {
		return at, nil
	}
	at.netns, at.cont, err = link.OpenContainer(a.Netns, !needNetns, func(err error) {
		fmt.Fprintf(a.Stderr, "bridge: DEL goes on without the container side: %v\n", err)
	})
	if err != nil {
		at.close()
		return nil, err
	}
	return at, nil
}

func (at *attach) close() {
	if at.cont != nil {
		at.cont.Close()
	}
	if at.host != nil {
		at.host.Close()
	}
	if at.netns != nil {
		_ = at.netns.Close() // read-only handle: nothing to flush
	}
}

// owner is the owner tag of this attachment's firewall rules.
func (at *attach) owner() firewall.Owner {
	return firewall.Owner{Plugin: firewall.PluginBridge, Network: at.conf.Name, ContainerID: at.args.ContainerID, IfName: at.args.IfName}
}

// rules returns the firewall, choosing the backend once per call.
func (at *attach) rules(ctx context.Context) (firewall.Backend, error) {
	if at.fw != nil {
		return at.fw, nil
	}
	fw, err := at.p.newRules(ctx, at.conf.Backend())
	if err != nil {
		return nil, err
	}
	at.fw = fw
	return fw, nil
}

// timed wraps a step so that tracing reports its duration.
func (at *attach) timed(name string, step func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		defer at.tm.Step(name)()
		return step(ctx)
	}
}
