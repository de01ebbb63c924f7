package iptables

import (
	"golang.org/x/sys/unix"

	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/types"
)

// family is one IP family of table nat.
type family struct{ v4 bool }

// families are IPv4, then IPv6: the order every call works in.
var families = []family{{v4: true}, {v4: false}}

// table returns the nftables table behind the family's nat table, with
// iptables-nft.
func (f family) table() netfilter.Table {
	if f.v4 {
		return netfilter.Table{Family: "ip", Name: "nat"}
	}
	return netfilter.Table{Family: "ip6", Name: "nat"}
}

func (f family) proto() byte {
	if f.v4 {
		return unix.NFPROTO_IPV4
	}
	return unix.NFPROTO_IPV6
}

// String names the family as its iptables command does.
func (f family) String() string {
	if f.v4 {
		return "iptables"
	}
	return "ip6tables"
}

// call holds what one Ensure, Remove, Check or GC shares: the netfilter
// socket, dialled on first use (a legacy node's call may need none), for
// the iptables-nft reads and writes, the localnet guard, the spoof check,
// the isolation and the reference plugins' rules. dial is the backend's
// (netfilter.Dial when nil).
type call struct {
	dial func() (*netfilter.Conn, error)
	conn *netfilter.Conn
}

func (c *call) socket() (*netfilter.Conn, error) {
	if c.conn == nil {
		dial := c.dial
		if dial == nil {
			dial = netfilter.Dial
		}
		conn, err := dial()
		if err != nil {
			return nil, types.Errorf(types.ErrIO, "%w", err)
		}
		c.conn = conn
	}
	return c.conn, nil
}

func (c *call) close() {
	if c.conn != nil {
		c.conn.Close()
	}
}
