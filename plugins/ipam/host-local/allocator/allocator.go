package allocator

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"cnisuite/pkg/types"
)

// Store is the lease store the allocator works on. The caller holds the
// store's lock across one whole Allocate, Release or Check, so that all range
// sets of one ADD are allocated under one lock.
type Store interface {
	// Reserve leases ip to a and records it as the last address reserved in
	// range set set; it returns false, and changes nothing, when ip is leased.
	Reserve(a types.Attachment, ip net.IP, set int) (bool, error)
	// LastReserved returns the last address reserved in range set set, or
	// nil when there is none.
	LastReserved(set int) (net.IP, error)
	// Release removes the lease of ip; an absent lease is not an error.
	Release(ip net.IP) error
	// Leases returns the addresses leased to a; when there are none, those
	// leased in the legacy format to a's container ID.
	Leases(a types.Attachment) ([]net.IP, error)
}

// Request is what one ADD asks for.
type Request struct {
	Attachment types.Attachment
	// Requested are specific addresses, any number per range set.
	Requested []net.IP
}

// Lease is one allocated address.
type Lease struct {
	// Set is the index of the range set the address comes from.
	Set int
	// Address is the address with the prefix length of its subnet.
	Address net.IPNet
	// Gateway is the gateway of the address's range.
	Gateway net.IP
}

// maxTries bounds the round-robin walk of one range set, so that a huge
// IPv6 set whose addresses are mostly leased still ends.
const maxTries = 1 << 22

// Allocate takes, from every set, the addresses req asks for in it, or one
// free address when it asks for none there; all or nothing: on any failure
// it releases what it took. An attachment that already holds a lease
// is refused, naming that lease.
func Allocate(s Store, sets []RangeSet, req Request) ([]Lease, error) {
	held, err := s.Leases(req.Attachment)
	if err != nil {
		return nil, err
	}
	if len(held) > 0 {
		return nil, types.Errorf(types.ErrInvalidEnv,
			"container %q interface %q already holds %s on this network; an ADD needs a DEL before it is repeated",
			req.Attachment.ContainerID, req.Attachment.IfName, joinIPs(held))
	}
	wanted, err := assignRequested(sets, req.Requested)
	if err != nil {
		return nil, err
	}
	var out []Lease
	for i, set := range sets {
		wants := wanted[i]
		if len(wants) == 0 {
			wants = []net.IP{nil} // the next free address
		}
		for _, want := range wants {
			l, err := allocateOne(s, set, i, req.Attachment, want)
			if err != nil {
				return nil, errors.Join(err, releaseLeases(s, out))
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// assignRequested maps each requested address to the set holding it, in
// the order asked, and refuses addresses outside every set and gateways.
// An address asked twice counts once.
func assignRequested(sets []RangeSet, requested []net.IP) (map[int][]net.IP, error) {
	out := map[int][]net.IP{}
	seen := map[string]bool{}
	for _, ip := range requested {
		si, ri := -1, -1
		for i := range sets {
			if ri = sets[i].RangeFor(ip); ri >= 0 {
				si = i
				break
			}
		}
		switch {
		case si < 0:
			return nil, types.Errorf(types.ErrInvalidConfig, "requested address %s is outside every range set", ip)
		case ip.Equal(sets[si][ri].Gateway):
			return nil, types.Errorf(types.ErrInvalidConfig, "requested address %s is the gateway of range %s", ip, sets[si][ri].String())
		case seen[canonicalIP(ip).String()]:
			continue
		}
		seen[canonicalIP(ip).String()] = true
		out[si] = append(out[si], canonicalIP(ip))
	}
	return out, nil
}

// allocateOne leases want, or the next free candidate of set when want is nil.
func allocateOne(s Store, set RangeSet, idx int, a types.Attachment, want net.IP) (Lease, error) {
	if want != nil {
		ok, err := s.Reserve(a, want, idx)
		if err != nil {
			return Lease{}, err
		}
		if !ok {
			return Lease{}, types.Errorf(types.ErrTryAgain, "requested address %s is already leased (range set %d: %s)", want, idx, set.String())
		}
		return leaseOf(set, idx, set.RangeFor(want), want), nil
	}
	last, err := s.LastReserved(idx)
	if err != nil {
		return Lease{}, err
	}
	tries := 0
	for ri, ip := range set.Candidates(last) {
		if tries++; tries > maxTries {
			break
		}
		ok, err := s.Reserve(a, ip, idx)
		if err != nil {
			return Lease{}, err
		}
		if ok {
			return leaseOf(set, idx, ri, ip), nil
		}
	}
	return Lease{}, types.Errorf(types.ErrTryAgain, "no IP addresses available in range set %d: %s", idx, set.String())
}

func leaseOf(set RangeSet, idx, ri int, ip net.IP) Lease {
	r := &set[ri]
	return Lease{Set: idx, Address: net.IPNet{IP: ip, Mask: r.Subnet.Mask}, Gateway: r.Gateway}
}

// Release removes every lease of a (or, when there is none, every legacy
// lease of its container ID). Releasing nothing is not an error.
func Release(s Store, a types.Attachment) error {
	held, err := s.Leases(a)
	if err != nil {
		return err
	}
	var errs []error
	for _, ip := range held {
		errs = append(errs, s.Release(ip))
	}
	return errors.Join(errs...)
}

func releaseLeases(s Store, leases []Lease) error {
	var errs []error
	for _, l := range leases {
		if err := s.Release(l.Address.IP); err != nil {
			errs = append(errs, fmt.Errorf("releasing %s after a failed allocation: %w", l.Address.IP, err))
		}
	}
	return errors.Join(errs...)
}

func joinIPs(ips []net.IP) string {
	parts := make([]string, len(ips))
	for i, ip := range ips {
		parts[i] = ip.String()
	}
	return strings.Join(parts, ", ")
}

// Prober answers the questions of STATUS without taking the lock.
type Prober interface {
	// Count returns how many leases the store holds, over every set.
	Count() (int, error)
	// Taken reports whether ip is leased.
	Taken(ip net.IP) (bool, error)
}

// nextProbes is how many addresses after the last one reserved HasFree
// tries before it counts the leases: with round-robin allocation the next
// one is almost always free.
const nextProbes = 8

// HasFree reports whether set has an address left to lease. It first tries
// the few addresses ADD would try next (after last, the set's last reserved
// address, nil for none), each one stat(2); only when they are all taken
// does it count the leases, and it looks at no more addresses than the
// store holds leases. containerd calls STATUS every few seconds, so the
// usual answer must not read the whole directory.
func HasFree(p Prober, set RangeSet, last net.IP) (bool, error) {
	probed := 0
	for _, ip := range set.Candidates(last) {
		if probed++; probed > nextProbes {
			break
		}
		taken, err := p.Taken(ip)
		if err != nil || !taken {
			return err == nil, err
		}
	}
	n, err := p.Count()
	if err != nil {
		return false, err
	}
	if set.Size(n+1) > n {
		return true, nil
	}
	for _, ip := range set.Candidates(nil) {
		taken, err := p.Taken(ip)
		if err != nil {
			return false, err
		}
		if !taken {
			return true, nil
		}
	}
	return false, nil
}
