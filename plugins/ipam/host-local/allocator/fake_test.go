package allocator

import (
	"errors"
	"net"
	"sort"
	"strings"

	"cnisuite/pkg/types"
)

// fakeStore keeps leases in memory; failOn makes Reserve of that address fail.
type fakeStore struct {
	leases map[string]types.Attachment // ip → owner; IfName "" is a legacy lease
	last   map[int]string
	failOn string
}

// newFake is a store holding leased: address → "container/ifname" (or
// "container" alone, as a legacy lease names it).
func newFake(leased map[string]string) *fakeStore {
	f := &fakeStore{leases: map[string]types.Attachment{}, last: map[int]string{}}
	for ip, owner := range leased {
		id, ifname, _ := strings.Cut(owner, "/")
		f.leases[net.ParseIP(ip).String()] = types.Attachment{ContainerID: id, IfName: ifname}
	}
	return f
}

var errInjected = errors.New("injected failure")

func (f *fakeStore) Reserve(a types.Attachment, ip net.IP, set int) (bool, error) {
	if ip.String() == f.failOn {
		return false, errInjected
	}
	if _, ok := f.leases[ip.String()]; ok {
		return false, nil
	}
	f.leases[ip.String()] = a
	f.last[set] = ip.String()
	return true, nil
}

func (f *fakeStore) LastReserved(set int) (net.IP, error) {
	return net.ParseIP(f.last[set]), nil
}

func (f *fakeStore) Release(ip net.IP) error {
	delete(f.leases, ip.String())
	return nil
}

func (f *fakeStore) Leases(a types.Attachment) ([]net.IP, error) {
	var out, legacy []net.IP
	for ip, owner := range f.leases {
		switch {
		case owner == a:
			out = append(out, net.ParseIP(ip))
		case owner.IfName == "" && owner.ContainerID == a.ContainerID:
			legacy = append(legacy, net.ParseIP(ip))
		}
	}
	if len(out) == 0 {
		out = legacy
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func (f *fakeStore) Count() (int, error) { return len(f.leases), nil }

func (f *fakeStore) Taken(ip net.IP) (bool, error) {
	_, ok := f.leases[ip.String()]
	return ok, nil
}
