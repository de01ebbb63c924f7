// Package vlanplan is what a bridge port's VLAN table should be: the
// vlan and vlanTrunk keys checked, the plan of a port's VLANs made from
// them, and a port's table as read compared with the plan. pkg/link
// applies and reads the table over netlink.
package vlanplan

import (
	"errors"
	"fmt"
	"sort"

	"cnisuite/pkg/types"
)

// Entry is one VLAN of a bridge port, as `bridge vlan add` takes it.
type Entry struct {
	VID      uint16
	PVID     bool // the port's native VLAN: untagged ingress frames join it
	Untagged bool // egress frames of this VLAN leave without a tag
}

// Plan is what a bridge port's VLAN table should become.
type Plan struct {
	// Flush removes every VLAN the port already has (such as the default
	// VLAN 1) before Entries are added.
	Flush   bool
	Entries []Entry
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return !p.Flush && len(p.Entries) == 0 }

// ForPort computes the VLAN table of a container's bridge port.
//
//   - access (1..4094) becomes the port's native VLAN: PVID and untagged.
//   - each trunk ID is carried tagged; a trunk without an access VLAN gets
//     VLAN 1 as its native VLAN, as the reference plugin does.
//   - unless preserveDefault, the port's existing VLANs are flushed first, so
//     that the default VLAN 1 does not leak traffic between tenants.
//
// With neither access nor trunk the plan is empty. trunk need not be sorted
// or free of duplicates, and an ID equal to access is carried untagged only.
func ForPort(access int, trunk []int, preserveDefault bool) Plan {
	if access == 0 && len(trunk) == 0 {
		return Plan{}
	}
	plan := Plan{Flush: !preserveDefault}
	native := access
	if native == 0 {
		native = 1
	}
	plan.Entries = append(plan.Entries, Entry{VID: uint16(native), PVID: true, Untagged: true})
	for _, id := range SortedIDs(trunk) {
		if id == native {
			continue
		}
		plan.Entries = append(plan.Entries, Entry{VID: uint16(id)})
	}
	return plan
}

// SortedIDs returns ids sorted and without duplicates.
func SortedIDs(ids []int) []int {
	out := append([]int(nil), ids...)
	sort.Ints(out)
	n := 0
	for i, id := range out {
		if i > 0 && id == out[n-1] {
			continue
		}
		out[n] = id
		n++
	}
	return out[:n]
}

// GatewayName is the name of the host interface that carries the gateway
// address of a VLAN: "<bridge>.<vlan>".
func GatewayName(bridge string, vlan int) string {
	return fmt.Sprintf("%s.%d", bridge, vlan)
}

// Check compares a port's VLANs got (as PortVlans reads them) with the
// plan: every planned VLAN with its PVID and untagged flags and, when the
// plan flushes (the existing VLANs are not preserved), nothing more. name
// is the port's, for the messages.
func (p Plan) Check(name string, got []Entry) error {
	have := make(map[uint16]Entry, len(got))
	for _, v := range got {
		have[v.VID] = v
	}
	for _, want := range p.Entries {
		if v, ok := have[want.VID]; !ok || v != want {
			return fmt.Errorf("port %q: VLAN %d is %s, want %s", name, want.VID, vlanString(v, ok), vlanString(want, true))
		}
		delete(have, want.VID)
	}
	for _, v := range got {
		if _, extra := have[v.VID]; extra && p.Flush {
			return fmt.Errorf("port %q: VLAN %d is not configured (preserveDefaultVlan is false)", name, v.VID)
		}
	}
	return nil
}

func vlanString(v Entry, ok bool) string {
	if !ok {
		return "missing"
	}
	s := "tagged"
	if v.Untagged {
		s = "untagged"
	}
	if v.PVID {
		s = "PVID " + s
	}
	return s
}

// TrunkEntry is one element of a vlanTrunk list as a configuration gives
// it: a single id, a minID..maxID range, or both.
type TrunkEntry struct {
	ID    *int `json:"id,omitempty"`
	MinID *int `json:"minID,omitempty"`
	MaxID *int `json:"maxID,omitempty"`
}

// Validate checks an access VLAN (vlan, 0 for none) and a vlanTrunk
// list, and returns the trunk's VLAN IDs sorted and without duplicates.
// Its errors are invalid configuration (code 7), every one at once,
// naming vlan or vlanTrunk[i].
func Validate(vlan int, trunk []TrunkEntry) ([]int, error) {
	var errs []error
	if vlan < 0 || vlan > 4094 {
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, "vlan: invalid VLAN ID %d (must be between 0 and 4094)", vlan))
	}
	var ids []int
	for i, e := range trunk {
		got, err := TrunkIDs(e.ID, e.MinID, e.MaxID)
		if err != nil {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig, "vlanTrunk[%d]: %w", i, err))
		}
		ids = append(ids, got...)
	}
	return SortedIDs(ids), errors.Join(errs...)
}

// TrunkIDs returns the VLAN IDs of one vlanTrunk entry: a single id, a
// minID..maxID range, or both; each ID 1-4094, minID and maxID given
// together and in order. Errors name the entry's keys.
func TrunkIDs(id, minID, maxID *int) ([]int, error) {
	validID := func(what string, v *int) error {
		if *v < 1 || *v > 4094 {
			return fmt.Errorf("incorrect trunk %s parameter %d (must be between 1 and 4094)", what, *v)
		}
		return nil
	}
	var out []int
	if id != nil {
		if err := validID("id", id); err != nil {
			return nil, err
		}
		out = append(out, *id)
	}
	switch {
	case minID == nil && maxID == nil:
		if id == nil {
			return nil, errors.New("needs id, or minID and maxID")
		}
		return out, nil
	case minID == nil:
		return nil, errors.New("minID and maxID should be configured simultaneously, minID is missing")
	case maxID == nil:
		return nil, errors.New("minID and maxID should be configured simultaneously, maxID is missing")
	}
	if err := errors.Join(validID("minID", minID), validID("maxID", maxID)); err != nil {
		return nil, err
	}
	if *minID > *maxID {
		return nil, fmt.Errorf("minID is greater than maxID in trunk parameter (%d > %d)", *minID, *maxID)
	}
	for v := *minID; v <= *maxID; v++ {
		out = append(out, v)
	}
	return out, nil
}
