package store

import (
	"net"

	"cnisuite/pkg/types"
)

// GC releases every lease whose attachment is not in valid and returns the
// addresses it released. A legacy lease, which names only a container ID,
// stays when that container has a valid attachment; an empty valid list
// releases every lease of the network. lock and last_reserved_ip.* stay.
// GC reads every lease file, then rebuilds the index.
func (s *Store) GC(valid []types.Attachment) (released []net.IP, err error) {
	defer s.markBroken(&err)
	keep := map[types.Attachment]bool{}
	for _, a := range valid {
		keep[a] = true
		keep[types.Attachment{ContainerID: a.ContainerID}] = true
	}
	leases, err := s.scan()
	if err != nil {
		return nil, err
	}
	var kept []leaseEntry
	for _, l := range leases {
		if l.owner.ContainerID != "" && keep[l.owner] {
			kept = append(kept, l)
			continue
		}
		if err := s.begin(); err != nil {
			return released, err
		}
		if err := s.net.Remove(leaseName(l.ip)); err != nil {
			return released, ioErr("releasing lease", err)
		}
		released = append(released, l.ip)
	}
	return released, s.rebuild(kept)
}
