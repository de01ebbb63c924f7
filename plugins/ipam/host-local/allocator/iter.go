package allocator

import (
	"iter"
	"math/big"
	"net"

	"cnisuite/pkg/ipmath"
)

// Candidates yields, round-robin, every address of the set that may be
// leased, with the index of its range: it starts right after last when last
// is in the set (else at the first rangeStart), walks each range to its
// rangeEnd, goes on with the next range, wraps from the last range to the
// first, skips each range's gateway and ends with last itself.
func (s RangeSet) Candidates(last net.IP) iter.Seq2[int, net.IP] {
	return func(yield func(int, net.IP) bool) {
		if len(s) == 0 {
			return
		}
		ri, ip := s.start(last)
		startRange, startIP := ri, ip
		for {
			if !ip.Equal(s[ri].Gateway) && !yield(ri, ip) {
				return
			}
			ri, ip = s.next(ri, ip)
			if ri == startRange && ip.Equal(startIP) {
				return
			}
		}
	}
}

// start is the first candidate: the address after last, or the first
// rangeStart when last is not in the set.
func (s RangeSet) start(last net.IP) (int, net.IP) {
	if last != nil {
		if ri := s.RangeFor(last); ri >= 0 {
			return s.next(ri, canonicalIP(last))
		}
	}
	return 0, s[0].RangeStart
}

// next steps from ip in range ri to the following address of the set.
func (s RangeSet) next(ri int, ip net.IP) (int, net.IP) {
	if ip.Equal(s[ri].RangeEnd) {
		ri = (ri + 1) % len(s)
		return ri, s[ri].RangeStart
	}
	return ri, ipmath.Next(ip)
}

// Size returns how many addresses the set can lease (its gateways excluded),
// capped at limit.
func (s RangeSet) Size(limit int) int {
	total := new(big.Int)
	for i := range s {
		r := &s[i]
		n := new(big.Int).Sub(new(big.Int).SetBytes(r.RangeEnd), new(big.Int).SetBytes(r.RangeStart))
		n.Add(n, big.NewInt(1))
		if r.Contains(r.Gateway) {
			n.Sub(n, big.NewInt(1))
		}
		total.Add(total, n)
	}
	if !total.IsInt64() || total.Int64() > int64(limit) {
		return limit
	}
	return int(total.Int64())
}
