// Package ethconf is the part of tuning that sets an interface's features
// (offloads) and channel counts over the ethtool netlink family: it
// decodes and validates the "features" and "channels" keys, resolves the
// configured names against the kernel's, refuses what the driver cannot
// do before anything changes, plans the changes with their inverses,
// reads them back for CHECK and puts them back for DEL.
package ethconf

import "path"

// Groups are the names `ethtool -k` prints for groups of kernel features,
// each with the pattern (path.Match) of its members' kernel names, as
// ethtool's command line defines them. A group is a convenience: it stands
// for every member the kernel has.
var Groups = map[string]string{
	"rx-checksumming":              "rx-checksum",
	"tx-checksumming":              "tx-checksum-*",
	"scatter-gather":               "tx-scatter-gather*",
	"tcp-segmentation-offload":     "tx-tcp*-segmentation",
	"generic-segmentation-offload": "tx-generic-segmentation",
	"generic-receive-offload":      "rx-gro",
	"large-receive-offload":        "rx-lro",
	"rx-vlan-offload":              "rx-vlan-hw-parse",
	"tx-vlan-offload":              "tx-vlan-hw-insert",
	"ntuple-filters":               "rx-ntuple-filter",
	"receive-hashing":              "rx-hashing",
}

// InGroup reports whether the kernel feature name is a member of group.
func InGroup(group, name string) bool {
	pattern, ok := Groups[group]
	if !ok {
		return false
	}
	ok, _ = path.Match(pattern, name) // the patterns are valid
	return ok
}

// Request is one configured feature: a kernel name or a group, and
// whether it is to be on.
type Request struct {
	Name string
	On   bool
}
