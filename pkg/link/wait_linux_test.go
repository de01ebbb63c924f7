package link

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// portNS is a namespace with the bridge br0 up and the veth dum0 its
// port; dum0's peer dum1 is up when peerUp (else dum0 has no carrier).
func portNS(t *testing.T, peerUp bool) testNS {
	t.Helper()
	n := newNS(t)
	br := n.bridge(t, "br0")
	if err := n.h.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}
	if err := AttachPort(n.h, n.veth(t, "dum0", "dum1"), br, PortOptions{}); err != nil {
		t.Fatal(err)
	}
	if peerUp {
		if err := n.h.LinkSetUp(n.link(t, "dum1")); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// WaitForwarding returns once the port forwards — at once, or when its
// carrier comes — returns a port still learning under STP when the time is
// up, and fails on a port that stays down, a link that is no port, a
// missing link, and a cancelled wait.
func TestWaitForwarding(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		peerUp  bool
		stp     bool   // STP turned on, then dum1 set up
		later   string // an `ip` command run once the wait began
		port    string
		ctx     context.Context
		timeout time.Duration
		wantErr string // "" = the link is returned
	}{
		{name: "forwarding", peerUp: true, port: "dum0", timeout: time.Second},
		{name: "carrier_comes", later: "link set dum1 up", port: "dum0", timeout: 30 * time.Second},
		{name: "stp_listening", stp: true, port: "dum0", timeout: 500 * time.Millisecond},
		{name: "stays_down", port: "dum0", timeout: 50 * time.Millisecond, wantErr: `bridge port not forwarding: "dum0" is disabled`},
		{name: "not_a_port", peerUp: true, port: "dum1", timeout: time.Second, wantErr: `"dum1" is not a bridge port`},
		{name: "missing", port: "nosuch0", timeout: time.Second, wantErr: `reading link "nosuch0"`},
		{name: "cancelled", port: "dum0", ctx: cancelled, timeout: 30 * time.Second, wantErr: "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := portNS(t, tt.peerUp)
			if tt.stp {
				n.do(t, func() error {
					if err := exec.Command("ip", "link", "set", "br0", "type", "bridge", "stp_state", "1").Run(); err != nil {
						return err
					}
					return exec.Command("ip", "link", "set", "dum1", "up").Run()
				})
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			if tt.later != "" {
				go func() {
					time.Sleep(20 * time.Millisecond)
					_ = n.Do(func() error { return exec.Command("ip", strings.Fields(tt.later)...).Run() })
				}()
			}
			var name string
			err := n.Do(func() error {
				l, err := WaitForwarding(ctx, tt.port, tt.timeout)
				if l != nil {
					name = l.Attrs().Name
				}
				return err
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("WaitForwarding() = %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || name != tt.port {
				t.Fatalf("WaitForwarding() = %q, %v; want the link %s", name, err, tt.port)
			}
			want := "forwarding"
			if tt.stp {
				want = "listening"
			}
			if got := mustShow(t, n.NetNS, tt.port).LinkInfo.SlaveData.State; got != want {
				t.Errorf("ip -d link show %s: state %s, want %s", tt.port, got, want)
			}
		})
	}
}

// ReadPort reads a port's state as `bridge link` shows it, and tells a
// link that is no port.
func TestReadPort(t *testing.T) {
	n := portNS(t, true)
	n.do(t, func() error {
		l, state, isPort, err := ReadPort("dum0")
		if err != nil || !isPort || state != PortForwarding || l.Attrs().Name != "dum0" {
			t.Errorf("ReadPort(dum0) = %v, %v, %v, %v; want the forwarding port", l, state, isPort, err)
		}
		if _, _, isPort, err := ReadPort("dum1"); err != nil || isPort {
			t.Errorf("ReadPort(dum1) = %v, %v; want a link that is no port", isPort, err)
		}
		if _, _, _, err := ReadPort("br0"); err != nil {
			t.Errorf("ReadPort(br0) = %v", err)
		}
		return nil
	})
	names := map[PortState]string{PortDisabled: "disabled", PortListening: "listening", PortLearning: "learning",
		PortForwarding: "forwarding", PortBlocking: "blocking", 9: "state(9)"}
	for s, want := range names {
		if s.String() != want {
			t.Errorf("PortState(%d) = %s, want %s", uint8(s), s, want)
		}
	}
}
