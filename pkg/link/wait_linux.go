package link

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// PortState is the spanning-tree state of a bridge port (BR_STATE_*).
type PortState uint8

// Bridge port states, as the kernel numbers them.
const (
	PortDisabled   PortState = 0
	PortListening  PortState = 1
	PortLearning   PortState = 2
	PortForwarding PortState = 3
	PortBlocking   PortState = 4
)

// String names the state as `bridge link` prints it.
func (s PortState) String() string {
	names := []string{"disabled", "listening", "learning", "forwarding", "blocking"}
	if int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ErrPortNotForwarding is returned when a bridge port does not forward in time.
var ErrPortNotForwarding = errors.New("bridge port not forwarding")

// ReadPort reads the link called name in the calling thread's namespace
// with one request, and its spanning-tree state when it is a bridge port
// (isPort false otherwise).
//
// Equivalent to: ip -d link show dev $name
func ReadPort(name string) (l netlink.Link, state PortState, isPort bool, err error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, 0)
	if err != nil {
		// ENODEV stays in the chain: IsNotFound recognises it. (An empty
		// netlink.LinkNotFoundError would panic when printed.)
		return nil, 0, false, fmt.Errorf("reading link %q: %w", name, err)
	}
	if len(msgs) != 1 {
		return nil, 0, false, fmt.Errorf("reading link %q: %d answers", name, len(msgs))
	}
	if l, err = netlink.LinkDeserialize(nil, msgs[0]); err != nil {
		return nil, 0, false, fmt.Errorf("parsing link %q: %w", name, err)
	}
	info := nl.DeserializeIfInfomsg(msgs[0])
	attrs, err := nl.ParseRouteAttr(msgs[0][info.Len():])
	if err != nil {
		return nil, 0, false, fmt.Errorf("parsing link %q: %w", name, err)
	}
	state, isPort = portStateAttr(attrs)
	return l, state, isPort, nil
}

func portStateAttr(attrs []syscall.NetlinkRouteAttr) (PortState, bool) {
	for _, a := range attrs {
		if a.Attr.Type&^unix.NLA_F_NESTED != unix.IFLA_LINKINFO {
			continue
		}
		infos, err := nl.ParseRouteAttr(a.Value)
		if err != nil {
			return 0, false
		}
		kind, data := "", []byte(nil)
		for _, i := range infos {
			switch i.Attr.Type &^ unix.NLA_F_NESTED {
			case nl.IFLA_INFO_SLAVE_KIND:
				kind = strings.TrimRight(string(i.Value), "\x00")
			case nl.IFLA_INFO_SLAVE_DATA:
				data = i.Value
			}
		}
		if kind == "bridge" {
			return brportState(data)
		}
	}
	return 0, false
}

func brportState(data []byte) (PortState, bool) {
	attrs, err := nl.ParseRouteAttr(data)
	if err != nil {
		return 0, false
	}
	for _, a := range attrs {
		if a.Attr.Type == nl.IFLA_BRPORT_STATE && len(a.Value) > 0 {
			return PortState(a.Value[0]), true
		}
	}
	return 0, false
}

// WaitForwarding waits until the bridge port called name, in the calling
// thread's namespace, is operationally up and forwarding, or until timeout,
// and returns the port's link as last read. A port that forwards already
// costs one request; otherwise the wait wakes on link notifications, not on
// a timer. When the time is up and the port is up but still listening or
// learning (the bridge runs STP), it returns the link and no error:
// forwarding then follows after the bridge's forward delay.
func WaitForwarding(ctx context.Context, name string, timeout time.Duration) (netlink.Link, error) {
	l, up, state, err := portStatus(name)
	if err != nil || (up && state == PortForwarding) {
		return l, err
	}
	return waitForwarding(ctx, name, timeout)
}

func waitForwarding(ctx context.Context, name string, timeout time.Duration) (netlink.Link, error) {
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	defer func() {
		close(done)
		go func() { // let the subscriber goroutine finish its last send and exit
			for range updates {
			}
		}()
	}()
	if err := netlink.LinkSubscribeWithOptions(updates, done, netlink.LinkSubscribeOptions{}); err != nil {
		return nil, fmt.Errorf("subscribing to link updates: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	wake := (<-chan netlink.LinkUpdate)(updates)
	var fallback <-chan time.Time // only when the subscription broke
	for {
		l, up, state, err := portStatus(name)
		if err != nil || (up && state == PortForwarding) {
			return l, err
		}
		select {
		case _, ok := <-wake:
			if !ok { // subscription lost (buffer overrun): re-check on a short tick instead
				wake = nil
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				fallback = tick.C
			}
		case <-fallback:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for bridge port %q: %w", name, ctx.Err())
		case <-timer.C:
			if up && (state == PortListening || state == PortLearning) {
				return l, nil
			}
			return nil, fmt.Errorf("%w: %q is %s after %v (oper up: %v)", ErrPortNotForwarding, name, state, timeout, up)
		}
	}
}

func portStatus(name string) (netlink.Link, bool, PortState, error) {
	l, state, isPort, err := ReadPort(name)
	if err != nil {
		return nil, false, 0, fmt.Errorf("reading bridge port %q: %w", name, err)
	}
	if !isPort {
		return nil, false, 0, fmt.Errorf("%q is not a bridge port: %w", name, unix.ENODEV)
	}
	return l, l.Attrs().OperState == netlink.OperUp, state, nil
}
