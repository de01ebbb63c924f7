package resync

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"cnisuite/pkg/firewall"
	"cnisuite/pkg/firewall/fwapi"
)

// A part that records its calls, gone until put back.
type fakePart struct {
	name string
	gone bool
	err  error // of Put
	log  *[]string
}

func (f *fakePart) part() Part {
	return Part{
		Check: func(context.Context) ([]string, error) {
			*f.log = append(*f.log, "check "+f.name)
			if f.gone {
				return []string{f.name}, nil
			}
			return nil, nil
		},
		Put: func(context.Context) error {
			*f.log = append(*f.log, "put "+f.name)
			if f.err == nil {
				f.gone = false
			}
			return f.err
		},
	}
}

func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dryRun      bool
		gone        [3]bool
		putErr      [3]error
		wantMissing string
		wantLog     string
		wantErr     bool
	}{
		{name: "intact", wantLog: "check a, check b, check c"},
		{name: "puts back what is gone, in order", gone: [3]bool{true, false, true},
			wantMissing: "a c", wantLog: "check a, put a, check b, check c, put c"},
		{name: "dry run puts nothing back", dryRun: true, gone: [3]bool{true, true, false},
			wantMissing: "a b", wantLog: "check a, check b, check c"},
		{name: "stops at a failed put", gone: [3]bool{false, true, true}, putErr: [3]error{nil, errors.New("refused")},
			wantMissing: "b", wantLog: "check a, check b, put b", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			var parts []Part
			for i, n := range []string{"a", "b", "c"} {
				parts = append(parts, (&fakePart{name: n, gone: tc.gone[i], err: tc.putErr[i], log: &log}).part())
			}
			missing, err := Repair(context.Background(), tc.dryRun, parts...)
			if (err != nil) != tc.wantErr || strings.Join(missing, " ") != tc.wantMissing {
				t.Errorf("Repair = %v, %v; want missing %q, error %v", missing, err, tc.wantMissing, tc.wantErr)
			}
			if got := strings.Join(log, ", "); got != tc.wantLog {
				t.Errorf("calls: %s\nwant:  %s", got, tc.wantLog)
			}
		})
	}
}

// Rules checks through the backend and ensures only what Check found
// missing; rules that ask for nothing never open a backend.
func TestRules(t *testing.T) {
	ctx := context.Background()
	fw := firewall.NewFake(firewall.KindNFTables)
	o := fwapi.Owner{Plugin: "bridge", Network: "net1", ContainerID: "c1", IfName: "eth0"}
	_, n, _ := net.ParseCIDR("10.0.0.5/24")
	r := fwapi.Rules{Masq: []fwapi.Masq{{Addr: *n}}}
	opened := 0
	backend := func(context.Context) (fwapi.Backend, error) { opened++; return fw, nil }
	part := Rules("firewall rules", backend, o, r)
	missing, err := Repair(ctx, true, part)
	if err != nil || !slices.Equal(missing, []string{"firewall rules"}) || fw.Dump() != "" {
		t.Fatalf("dry run = %v, %v, rules %q; want the rules missing and none written", missing, err, fw.Dump())
	}
	if missing, err = Repair(ctx, false, part); err != nil || len(missing) != 1 {
		t.Fatalf("repair = %v, %v; want the rules missing, then put back", missing, err)
	}
	if err := fw.Check(ctx, o, r); err != nil {
		t.Errorf("after the repair: %v", err)
	}
	calls := len(fw.Calls())
	if missing, err = Repair(ctx, false, part); err != nil || len(missing) != 0 {
		t.Errorf("second repair = %v, %v; want nothing missing", missing, err)
	}
	for _, c := range fw.Calls()[calls:] {
		if !strings.HasPrefix(c, "check") {
			t.Errorf("second repair changed the firewall: %s", c)
		}
	}
	opened = 0
	if missing, err = Repair(ctx, false, Rules("none", backend, o, fwapi.Rules{})); err != nil || missing != nil || opened != 0 {
		t.Errorf("empty rules: %v, %v, backend opened %d times; want nothing", missing, err, opened)
	}
}
