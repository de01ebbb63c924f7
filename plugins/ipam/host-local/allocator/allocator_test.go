package allocator

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

func sets(t *testing.T, specs ...[][4]string) []RangeSet {
	t.Helper()
	var out []RangeSet
	for _, spec := range specs {
		var set RangeSet
		for _, r := range spec {
			set = append(set, mustRange(t, r[0], r[1], r[2], r[3]))
		}
		if err := set.Canonicalize("s"); err != nil {
			t.Fatal(err)
		}
		out = append(out, set)
	}
	return out
}

func att(id string) types.Attachment { return types.Attachment{ContainerID: id, IfName: "eth0"} }

func addresses(leases []Lease) string {
	var parts []string
	for _, l := range leases {
		parts = append(parts, l.Address.String()+"/gw="+l.Gateway.String())
	}
	return strings.Join(parts, " ")
}

func TestAllocate(t *testing.T) {
	small := [][4]string{{"10.0.0.0/29"}} // leasable: .2 .3 .4 .5 .6
	v6 := [][4]string{{"2001:db8::/64"}}
	tests := []struct {
		name      string
		sets      []RangeSet
		leased    map[string]string // ip → container ID
		last      map[int]string
		requested []string
		want      string
		wantErr   string
		wantKind  error
	}{
		{name: "first_address_skips_gateway", sets: sets(t, small), want: "10.0.0.2/29/gw=10.0.0.1"},
		{name: "round_robin_after_last", sets: sets(t, small), last: map[int]string{0: "10.0.0.3"}, want: "10.0.0.4/29/gw=10.0.0.1"},
		{name: "wrap_around", sets: sets(t, small), last: map[int]string{0: "10.0.0.6"}, want: "10.0.0.2/29/gw=10.0.0.1"},
		{name: "skips_leased", sets: sets(t, small), leased: map[string]string{"10.0.0.2": "x", "10.0.0.3": "y"}, want: "10.0.0.4/29/gw=10.0.0.1"},
		{name: "last_reserved_is_tried_last", sets: sets(t, small), last: map[int]string{0: "10.0.0.4"},
			leased: map[string]string{"10.0.0.5": "a", "10.0.0.6": "b", "10.0.0.2": "c", "10.0.0.3": "d"}, want: "10.0.0.4/29/gw=10.0.0.1"},
		{name: "exhausted_range", sets: sets(t, small),
			leased:  map[string]string{"10.0.0.2": "a", "10.0.0.3": "b", "10.0.0.4": "c", "10.0.0.5": "d", "10.0.0.6": "e"},
			wantErr: "no IP addresses available in range set 0: 10.0.0.1-10.0.0.6", wantKind: types.ErrTryAgain},
		{name: "multiple_ranges_per_set", sets: sets(t, [][4]string{{"10.0.0.0/30"}, {"10.0.1.0/30", "", "", "10.0.1.2"}}),
			leased: map[string]string{"10.0.0.2": "a"}, want: "10.0.1.1/30/gw=10.0.1.2"},
		{name: "dual_stack", sets: sets(t, small, v6), want: "10.0.0.2/29/gw=10.0.0.1 2001:db8::2/64/gw=2001:db8::1"},
		{name: "requested", sets: sets(t, small, v6), requested: []string{"2001:db8::99", "10.0.0.5"},
			want: "10.0.0.5/29/gw=10.0.0.1 2001:db8::99/64/gw=2001:db8::1"},
		{name: "requested_and_dynamic", sets: sets(t, small, v6), requested: []string{"2001:db8::99"},
			want: "10.0.0.2/29/gw=10.0.0.1 2001:db8::99/64/gw=2001:db8::1"},
		{name: "requested_taken", sets: sets(t, small), leased: map[string]string{"10.0.0.5": "other"}, requested: []string{"10.0.0.5"},
			wantErr: "requested address 10.0.0.5 is already leased", wantKind: types.ErrTryAgain},
		{name: "requested_gateway", sets: sets(t, small), requested: []string{"10.0.0.1"},
			wantErr: "requested address 10.0.0.1 is the gateway", wantKind: types.ErrInvalidConfig},
		{name: "requested_outside_every_set", sets: sets(t, small), requested: []string{"192.168.0.5"},
			wantErr: "requested address 192.168.0.5 is outside every range set", wantKind: types.ErrInvalidConfig},
		{name: "requested_outside_range_but_in_subnet", sets: sets(t, [][4]string{{"10.0.0.0/24", "10.0.0.10", "10.0.0.20"}}),
			requested: []string{"10.0.0.5"}, wantErr: "outside every range set", wantKind: types.ErrInvalidConfig},
		{name: "several_requested_in_one_set", sets: sets(t, small, v6), requested: []string{"10.0.0.5", "10.0.0.3", "10.0.0.5", "10.0.0.6"},
			want: "10.0.0.5/29/gw=10.0.0.1 10.0.0.3/29/gw=10.0.0.1 10.0.0.6/29/gw=10.0.0.1 2001:db8::2/64/gw=2001:db8::1"},
		{name: "several_requested_one_taken", sets: sets(t, small), leased: map[string]string{"10.0.0.6": "other"},
			requested: []string{"10.0.0.5", "10.0.0.6"}, wantErr: "requested address 10.0.0.6 is already leased", wantKind: types.ErrTryAgain},
		{name: "duplicate_attachment", sets: sets(t, small), leased: map[string]string{"10.0.0.4": "c1/eth0"},
			wantErr: `container "c1" interface "eth0" already holds 10.0.0.4`, wantKind: types.ErrInvalidEnv},
		{name: "duplicate_attachment_legacy_lease", sets: sets(t, small), leased: map[string]string{"10.0.0.4": "c1"},
			wantErr: "already holds 10.0.0.4", wantKind: types.ErrInvalidEnv},
		{name: "other_interface_of_same_container", sets: sets(t, small), leased: map[string]string{"10.0.0.2": "c1/net1"},
			want: "10.0.0.3/29/gw=10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.leased)
			for set, ip := range tt.last {
				f.last[set] = ip
			}
			before := len(f.leases)
			var req []net.IP
			for _, r := range tt.requested {
				req = append(req, net.ParseIP(r))
			}
			got, err := Allocate(f, tt.sets, Request{Attachment: att("c1"), Requested: req})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tt.wantKind) {
					t.Fatalf("Allocate() = %v, %v; want error %q of kind %v", addresses(got), err, tt.wantErr, tt.wantKind)
				}
				if len(f.leases) != before {
					t.Errorf("Allocate() failed but left %d leases, want %d", len(f.leases), before)
				}
				return
			}
			if err != nil {
				t.Fatalf("Allocate() = %v", err)
			}
			if addresses(got) != tt.want {
				t.Errorf("Allocate() = %s, want %s", addresses(got), tt.want)
			}
		})
	}
}

func TestAllocateReleasesOnFailure(t *testing.T) {
	f := newFake(nil)
	f.failOn = "2001:db8::2"
	s := sets(t, [][4]string{{"10.0.0.0/29"}}, [][4]string{{"2001:db8::/64"}})
	_, err := Allocate(f, s, Request{Attachment: att("c1")})
	if !errors.Is(err, errInjected) {
		t.Fatalf("Allocate() = %v, want the injected failure", err)
	}
	if len(f.leases) != 0 {
		t.Errorf("Allocate() failed but left leases %v", f.leases)
	}
}

func TestAllocateSequence(t *testing.T) {
	f := newFake(nil)
	s := sets(t, [][4]string{{"10.0.0.0/29"}})
	var got []string
	for i := 0; i < 6; i++ {
		id := string(rune('a' + i))
		leases, err := Allocate(f, s, Request{Attachment: att(id)})
		if err != nil {
			got = append(got, "full")
			break
		}
		got = append(got, leases[0].Address.IP.String())
		if i == 1 {
			if err := Release(f, att("a")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// .2 is released after the second ADD but round-robin only comes back to it after .6.
	want := "10.0.0.2 10.0.0.3 10.0.0.4 10.0.0.5 10.0.0.6 10.0.0.2"
	if strings.Join(got, " ") != want {
		t.Errorf("six ADDs got %v, want %s", got, want)
	}
}

func TestRelease(t *testing.T) {
	tests := []struct {
		name   string
		leased map[string]string
		want   string // leases left
	}{
		{name: "own_leases_all_sets", leased: map[string]string{"10.0.0.2": "c1/eth0", "2001:db8::2": "c1/eth0", "10.0.0.3": "c2/eth0"}, want: "10.0.0.3"},
		{name: "unknown_is_fine", leased: map[string]string{"10.0.0.3": "c2/eth0"}, want: "10.0.0.3"},
		{name: "legacy_lease", leased: map[string]string{"10.0.0.2": "c1", "10.0.0.3": "c2"}, want: "10.0.0.3"},
		{name: "other_interface_kept", leased: map[string]string{"10.0.0.2": "c1/eth0", "10.0.0.3": "c1/net1"}, want: "10.0.0.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.leased)
			for i := 0; i < 2; i++ { // twice: a second DEL succeeds too
				if err := Release(f, att("c1")); err != nil {
					t.Fatalf("Release() #%d = %v", i+1, err)
				}
			}
			var left []string
			for ip := range f.leases {
				left = append(left, ip)
			}
			if strings.Join(left, " ") != tt.want {
				t.Errorf("Release() left %v, want %s", left, tt.want)
			}
		})
	}
}

func TestHasFree(t *testing.T) {
	s := sets(t, [][4]string{{"10.0.0.0/30"}})[0] // leasable: .2 only
	f := newFake(nil)
	if ok, err := HasFree(f, s, nil); !ok || err != nil {
		t.Errorf("HasFree(empty) = %v, %v; want true", ok, err)
	}
	f.leases["10.0.0.2"] = att("x")
	if ok, err := HasFree(f, s, nil); ok || err != nil {
		t.Errorf("HasFree(full) = %v, %v; want false", ok, err)
	}
	big := sets(t, [][4]string{{"2001:db8::/64"}})[0]
	if ok, err := HasFree(f, big, nil); !ok || err != nil {
		t.Errorf("HasFree(/64) = %v, %v; want true", ok, err)
	}
}

// countless fails the test if HasFree counts the leases.
type countless struct {
	*fakeStore
	counted bool
}

func (c *countless) Count() (int, error) { c.counted = true; return c.fakeStore.Count() }

// STATUS, called every few seconds by containerd, answers from the address
// ADD would take next without counting the leases; it counts only when the
// next few are taken.
func TestHasFreeTriesTheNextAddressFirst(t *testing.T) {
	s := sets(t, [][4]string{{"10.0.0.0/24"}})[0]
	f := &countless{fakeStore: newFake(nil)}
	for i := 2; i <= 200; i++ {
		f.leases[fmt.Sprintf("10.0.0.%d", i)] = att(fmt.Sprint("c", i))
	}
	if ok, err := HasFree(f, s, net.ParseIP("10.0.0.200")); !ok || err != nil || f.counted {
		t.Errorf("HasFree after 10.0.0.200 = %v, %v, counted %v; want true without counting", ok, err, f.counted)
	}
	if ok, err := HasFree(f, s, net.ParseIP("10.0.0.20")); !ok || err != nil || !f.counted {
		t.Errorf("HasFree after 10.0.0.20 (next 8 taken) = %v, %v, counted %v; want true after counting", ok, err, f.counted)
	}
}
