package vlanplan

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

func TestForPort(t *testing.T) {
	tests := []struct {
		name            string
		access          int
		trunk           []int
		preserveDefault bool
		want            Plan
	}{
		{"nothing", 0, nil, false, Plan{}},
		{"nothing preserves", 0, nil, true, Plan{}},
		{"access", 100, nil, false, Plan{Flush: true, Entries: []Entry{{100, true, true}}}},
		{"access_preserving_default", 100, nil, true, Plan{Entries: []Entry{{100, true, true}}}},
		{"trunk_gets_native_vlan_1", 0, []int{30, 10, 30}, false,
			Plan{Flush: true, Entries: []Entry{{1, true, true}, {10, false, false}, {30, false, false}}}},
		{"trunk_with_access_native", 20, []int{10, 20, 30}, false,
			Plan{Flush: true, Entries: []Entry{{20, true, true}, {10, false, false}, {30, false, false}}}},
		{"trunk_containing_1", 0, []int{1, 2}, true,
			Plan{Entries: []Entry{{1, true, true}, {2, false, false}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ForPort(tt.access, tt.trunk, tt.preserveDefault)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ForPort(%d, %v, %v) = %+v, want %+v", tt.access, tt.trunk, tt.preserveDefault, got, tt.want)
			}
		})
	}
}

func TestSortedIDs(t *testing.T) {
	got := SortedIDs([]int{5, 3, 5, 1, 3})
	if want := []int{1, 3, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("SortedIDs = %v, want %v", got, want)
	}
}

func TestPlanCheck(t *testing.T) {
	plan := ForPort(10, []int{20}, false) // flushes: VLAN 1 must be gone
	good := []Entry{{VID: 10, PVID: true, Untagged: true}, {VID: 20}}
	tests := []struct {
		name string
		got  []Entry
		want string // "" = no error
	}{
		{"as planned", good, ""},
		{"access tagged", []Entry{{VID: 10, PVID: true}, {VID: 20}}, `port "veth0": VLAN 10 is PVID tagged, want PVID untagged`},
		{"trunk missing", good[:1], `port "veth0": VLAN 20 is missing, want tagged`},
		{"default left", append([]Entry{{VID: 1, PVID: true, Untagged: true}}, good...), `port "veth0": VLAN 1 is not configured (preserveDefaultVlan is false)`},
	}
	for _, tt := range tests {
		err := plan.Check("veth0", tt.got)
		if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
			t.Errorf("Check/%s = %v, want %q", tt.name, err, tt.want)
		}
	}
	if err := ForPort(10, nil, true).Check("veth0", append(good, Entry{VID: 1})); err != nil {
		t.Errorf("Check with preserveDefaultVlan = %v, want extra VLANs accepted", err)
	}
}

func TestTrunkIDs(t *testing.T) {
	n := func(v int) *int { return &v }
	if got, err := TrunkIDs(n(5), n(10), n(12)); err != nil || fmt.Sprint(got) != "[5 10 11 12]" {
		t.Errorf("TrunkIDs(5, 10..12) = %v, %v, want [5 10 11 12]", got, err)
	}
	for _, tt := range []struct {
		id, min, max *int
		want         string
	}{
		{nil, nil, nil, "needs id, or minID and maxID"},
		{nil, n(3), nil, "maxID is missing"},
		{nil, n(9), n(3), "minID is greater than maxID in trunk parameter (9 > 3)"},
		{n(4095), nil, nil, "incorrect trunk id parameter 4095"},
	} {
		if _, err := TrunkIDs(tt.id, tt.min, tt.max); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("TrunkIDs(%v, %v, %v) = %v, want an error containing %q", tt.id, tt.min, tt.max, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	n := func(v int) *int { return &v }
	ids, err := Validate(5, []TrunkEntry{{ID: n(20)}, {MinID: n(5), MaxID: n(7)}, {ID: n(6)}})
	if err != nil || !slices.Equal(ids, []int{5, 6, 7, 20}) {
		t.Errorf("Validate(valid) = %v, %v, want [5 6 7 20]", ids, err)
	}
	_, err = Validate(4095, []TrunkEntry{{ID: n(1)}, {MinID: n(3)}})
	if !errors.Is(err, types.ErrInvalidConfig) || !strings.Contains(err.Error(), "vlan: invalid VLAN ID 4095") ||
		!strings.Contains(err.Error(), "vlanTrunk[1]: minID and maxID") {
		t.Errorf("Validate(4095, a range without maxID) = %v, want code 7 naming vlan and vlanTrunk[1]", err)
	}
}
