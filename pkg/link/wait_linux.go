package link

import (
	"context"
	"errors"
	"fmt"
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

// GetPortState returns the state of the bridge port with index ifindex in the
// calling thread's namespace.
//
// Equivalent to: bridge link show dev $port
func GetPortState(ifindex int) (PortState, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
	req.AddData(nl.NewIfInfomsg(unix.AF_BRIDGE))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return 0, fmt.Errorf("dumping bridge ports: %w", err)
	}
	for _, m := range msgs {
		info := nl.DeserializeIfInfomsg(m)
		if int(info.Index) != ifindex {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[info.Len():])
		if err != nil {
			return 0, fmt.Errorf("parsing bridge port %d: %w", ifindex, err)
		}
		if s, ok := portStateAttr(attrs); ok {
			return s, nil
		}
	}
	return PortDisabled, fmt.Errorf("interface %d is not a bridge port: %w", ifindex, unix.ENODEV)
}

func portStateAttr(attrs []syscall.NetlinkRouteAttr) (PortState, bool) {
	for _, a := range attrs {
		if a.Attr.Type != unix.IFLA_PROTINFO|unix.NLA_F_NESTED {
			continue
		}
		infos, err := nl.ParseRouteAttr(a.Value)
		if err != nil {
			return 0, false
		}
		for _, i := range infos {
			if i.Attr.Type == nl.IFLA_BRPORT_STATE && len(i.Value) > 0 {
				return PortState(i.Value[0]), true
			}
		}
	}
	return 0, false
}

// WaitForwarding waits until the bridge port called name, in the calling
// thread's namespace, is operationally up and forwarding, or until timeout.
// It wakes on link notifications, not on a timer. When the time is up and the
// port is up but still listening or learning (the bridge runs STP), it
// returns nil: forwarding then follows after the bridge's forward delay.
func WaitForwarding(ctx context.Context, h *netlink.Handle, name string, timeout time.Duration) error {
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
		return fmt.Errorf("subscribing to link updates: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	wake := (<-chan netlink.LinkUpdate)(updates)
	var fallback <-chan time.Time // only when the subscription broke
	for {
		up, state, err := portStatus(h, name)
		if err != nil {
			return err
		}
		if up && state == PortForwarding {
			return nil
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
			return fmt.Errorf("waiting for bridge port %q: %w", name, ctx.Err())
		case <-timer.C:
			if up && (state == PortListening || state == PortLearning) {
				return nil
			}
			return fmt.Errorf("%w: %q is %s after %v (oper up: %v)", ErrPortNotForwarding, name, state, timeout, up)
		}
	}
}

func portStatus(h *netlink.Handle, name string) (bool, PortState, error) {
	l, err := h.LinkByName(name)
	if err != nil {
		return false, 0, fmt.Errorf("reading bridge port %q: %w", name, err)
	}
	up := l.Attrs().OperState == netlink.OperUp
	state, err := GetPortState(l.Attrs().Index)
	if err != nil {
		return false, 0, err
	}
	return up, state, nil
}
