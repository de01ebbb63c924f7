package link

import (
	"reflect"
	"testing"
)

func TestPlanPortVlans(t *testing.T) {
	tests := []struct {
		name            string
		access          int
		trunk           []int
		preserveDefault bool
		want            VlanPlan
	}{
		{"nothing", 0, nil, false, VlanPlan{}},
		{"nothing preserves", 0, nil, true, VlanPlan{}},
		{"access", 100, nil, false, VlanPlan{Flush: true, Entries: []VlanEntry{{100, true, true}}}},
		{"access_preserving_default", 100, nil, true, VlanPlan{Entries: []VlanEntry{{100, true, true}}}},
		{"trunk_gets_native_vlan_1", 0, []int{30, 10, 30}, false,
			VlanPlan{Flush: true, Entries: []VlanEntry{{1, true, true}, {10, false, false}, {30, false, false}}}},
		{"trunk_with_access_native", 20, []int{10, 20, 30}, false,
			VlanPlan{Flush: true, Entries: []VlanEntry{{20, true, true}, {10, false, false}, {30, false, false}}}},
		{"trunk_containing_1", 0, []int{1, 2}, true,
			VlanPlan{Entries: []VlanEntry{{1, true, true}, {2, false, false}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanPortVlans(tt.access, tt.trunk, tt.preserveDefault)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PlanPortVlans(%d, %v, %v) = %+v, want %+v", tt.access, tt.trunk, tt.preserveDefault, got, tt.want)
			}
		})
	}
}

func TestSortedVlanIDs(t *testing.T) {
	got := SortedVlanIDs([]int{5, 3, 5, 1, 3})
	if want := []int{1, 3, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("SortedVlanIDs = %v, want %v", got, want)
	}
}
