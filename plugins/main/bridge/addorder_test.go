package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/records"
	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
	"cnisuite/plugins/main/bridge/bridgeconf"
	"cnisuite/test/golden"
)

// The order of ADD's steps and of a failed ADD's undo, without root: the
// steps are a fake (addSteps) that records them and pushes the inverses
// the real steps push; addOrUndo, add and containerSteps are the real ones.

var errRefused = errors.New("refused")

// fakeSteps records ADD's steps, pushes the inverse each real step pushes
// (IPAM's release, the veth's deletion, the forwarding holds' release,
// the rules' removal), fills the result as they do, and fails the step
// named fail.
type fakeSteps struct {
	at                  *attach
	fail                string
	v4only              bool // IPAM gives an IPv4 address only
	mu                  sync.Mutex
	ran, pushed, undone []string
}

func (f *fakeSteps) do(name, inverse string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ran = append(f.ran, name)
	if name == f.fail {
		return fmt.Errorf("%s: %w", name, errRefused)
	}
	if inverse != "" {
		f.pushed = append(f.pushed, inverse) // under f.mu: the stack's order
		f.at.undo.Push(inverse, func() error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.undone = append(f.undone, inverse)
			return nil
		})
	}
	return nil
}

func (f *fakeSteps) runIPAM(context.Context) error {
	_, n, _ := net.ParseCIDR("10.1.0.2/24")
	n.IP = net.ParseIP("10.1.0.2").To4()
	_, n6, _ := net.ParseCIDR("fd01::2/64") // dual stack: enabledad's order applies
	n6.IP = net.ParseIP("fd01::2")
	f.at.res.IPs = []*types.IPConfig{
		{Address: *n, Gateway: net.ParseIP("10.1.0.1").To4()},
		{Address: *n6, Gateway: net.ParseIP("fd01::1")},
	}
	if f.v4only {
		f.at.res.IPs = f.at.res.IPs[:1]
	}
	return f.do("runIPAM", "IPAM ADD")
}
func (f *fakeSteps) ensureBridge(context.Context) error { return f.do("ensureBridge", "") }
func (f *fakeSteps) setupVeth(context.Context) error {
	f.at.res.Interfaces = []*types.Interface{{Name: "cni0"}, {Name: "veth1"}, {Name: "eth0", Mac: "02:00:00:00:00:01"}}
	return f.do("setupVeth", "veth")
}
func (f *fakeSteps) containerUp(context.Context) error        { return f.do("containerUp", "") }
func (f *fakeSteps) configureContainer(context.Context) error { return f.do("configureContainer", "") }
func (f *fakeSteps) enableGateway(context.Context) error {
	if !f.at.conf.IsGW || !f.at.conf.HasIPAM() {
		return f.do("enableGateway", "")
	}
	return f.do("enableGateway", "forwarding holds")
}
func (f *fakeSteps) waitPort(context.Context) error { return f.do("waitPort", "") }
func (f *fakeSteps) installRules(_ context.Context, r firewall.Rules) error {
	if r.Empty() {
		return f.do("installRules", "")
	}
	return f.do("installRules", "firewall rules")
}
func (f *fakeSteps) finishResult(context.Context) error { return f.do("finishResult", "") }
func (f *fakeSteps) writeRecord() error                 { return f.do("writeRecord", "") }

// fakeAdd runs ADD's order on conf with the step fail failing.
func fakeAdd(t *testing.T, conf, fail string) (*fakeSteps, error) {
	t.Helper()
	return fakeAddWith(t, conf, fail, false)
}

// fakeAddWith is fakeAdd with an IPAM that gives IPv4 only when v4only.
func fakeAddWith(t *testing.T, conf, fail string, v4only bool) (*fakeSteps, error) {
	t.Helper()
	c, err := bridgeconf.Load([]byte(conf), "")
	if err != nil {
		t.Fatal(err)
	}
	p := &plugin{records: records.Store{Root: t.TempDir()}}
	at := &attach{p: p, conf: c, args: &skel.CmdArgs{ContainerID: "c1", IfName: "eth0", StdinData: []byte(conf)}}
	f := &fakeSteps{at: at, fail: fail, v4only: v4only}
	at.steps = f
	_, err = at.addOrUndo(context.Background())
	return f, err
}

// lanes are the steps that run one after the other; lanes run at the
// same time as each other.
var lanes = [][]string{
	{"ensureBridge", "setupVeth"},
	{"runIPAM"},
	{"containerUp", "waitPort", "configureContainer", "enableGateway", "waitPort"},
	{"installRules"},
	{"finishResult", "writeRecord"},
}

// inLane returns the steps of ran that belong to lane, in the order run.
func inLane(ran, lane []string) []string {
	var out []string
	for _, s := range ran {
		if slices.Contains(lane, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkFailed checks a failed ADD: the error is the step's, and every
// inverse pushed ran once, last pushed first.
func checkFailed(t *testing.T, f *fakeSteps, err error) {
	t.Helper()
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), f.fail) {
		t.Errorf("ADD with %s refused = %v, want its refusal", f.fail, err)
	}
	want := slices.Clone(f.pushed)
	slices.Reverse(want)
	if !slices.Equal(f.undone, want) {
		t.Errorf("with %s refused, undone %q, want %q (the inverses pushed, last first)", f.fail, f.undone, want)
	}
	if i := slices.Index(f.ran, f.fail); i >= 0 && slices.Contains(f.ran[i+1:], "finishResult") {
		t.Errorf("with %s refused, ADD went on to finishResult: %q", f.fail, f.ran)
	}
}

// TestFailedAddUndoesLastFirst fails each step of ADD in turn. Where the
// order of the inverses does not depend on which of two concurrent steps
// ends first (IPAM after the links, no gateway), the steps run and the
// undo are golden; elsewhere every inverse pushed must run, last first.
func TestFailedAddUndoesLastFirst(t *testing.T) {
	const head = `{"cniVersion":"1.0.0","name":"n","type":"bridge","ipMasq":true,`
	var out strings.Builder
	for _, tc := range []struct {
		name, conf string
		golden     bool
	}{
		{"layer 3, dhcp", head + `"ipam":{"type":"dhcp"}}`, true},
		{"layer 3, dhcp, enabledad", head + `"enabledad":true,"ipam":{"type":"dhcp"}}`, true},
		{"layer 2", head + `"macspoofchk":true}`, true},
		{"gateway, host-local", head + `"isGateway":true,"ipam":{"type":"host-local"}}`, false},
		{"gateway, host-local, enabledad", head + `"isGateway":true,"enabledad":true,"ipam":{"type":"host-local"}}`, false},
	} {
		ok, err := fakeAdd(t, tc.conf, "")
		if err != nil || len(ok.undone) > 0 {
			t.Fatalf("%s: ADD = %v, undone %q; want success, nothing undone", tc.name, err, ok.undone)
		}
		if tc.golden {
			fmt.Fprintf(&out, "# %s\n", tc.name)
		}
		var steps []string // lane by lane, each in the order it ran
		for _, lane := range lanes {
			if got := inLane(ok.ran, lane); len(got) > 0 {
				steps = append(steps, got...)
				if tc.golden {
					fmt.Fprintf(&out, "lane: %s\n", strings.Join(got, " → "))
				}
			}
		}
		for _, step := range steps {
			f, err := fakeAdd(t, tc.conf, step)
			checkFailed(t, f, err)
			if tc.golden {
				undone := strings.Join(f.undone, " → ")
				if undone == "" {
					undone = "nothing"
				}
				fmt.Fprintf(&out, "%s refused, undone: %s\n", step, undone)
			}
		}
	}
	golden.Check(t, "add_undo_order", out.String())
}

// TestEnabledadOrderNeedsIPv6: enabledad brings the container interface up
// before its addresses only when IPAM gave it an IPv6 address to probe; an
// IPv4-only pod gets its addresses (and IPv6 off) first, as without it.
func TestEnabledadOrderNeedsIPv6(t *testing.T) {
	conf := `{"cniVersion":"1.0.0","name":"n","type":"bridge","enabledad":true,"ipam":{"type":"dhcp"}}`
	for _, v4only := range []bool{false, true} {
		f, err := fakeAddWith(t, conf, "", v4only)
		if err != nil {
			t.Fatal(err)
		}
		if up := slices.Contains(f.ran, "containerUp"); up == v4only {
			t.Errorf("IPv4 only %v: steps %q; want containerUp first: %v", v4only, f.ran, !v4only)
		}
	}
}
