package netfilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// nlTimeout bounds every wait for the kernel's answer on the socket.
const nlTimeout = 5 * time.Second

// Conn is the one netfilter netlink socket a call reads and writes with.
//
// google/nftables' Conn either dials a socket per request, each of whose
// closes after a deleting transaction pays the wait below, or keeps one
// inside mdlayher/netlink, which reads each datagram twice (a peek for its
// size, then the read). This one is a plain file descriptor.
//
// A socket is cheap to open, but closing a netfilter socket after a
// transaction that deleted anything waits in the kernel for the deferred
// release of the deleted objects (an RCU grace period: nft_rcv_nl_event
// flushes the nf_tables destroy work). One socket per call pays that wait
// once, at exit, instead of after every request.
//
// The socket is a plain blocking one read with a buffer of 64 KiB: the
// kernel then fills each dump message up to 32 KiB, so listing a chain of
// a thousand rules takes a handful of system calls.
type Conn struct {
	sock socket // the kernel's (fdSocket), or a Peer's in tests
	seq  uint32
	buf  []byte
	// sndbuf and rcvbuf are the socket's buffer sizes once read (0 before:
	// the node's defaults), grown for large transactions (apply_linux.go).
	sndbuf, rcvbuf int
}

// Dial opens the socket.
func Dial() (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netlink to nftables: %w", err)
	}
	tv := unix.NsecToTimeval(nlTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink to nftables: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink to nftables: %w", err)
	}
	return &Conn{sock: fdSocket(fd), seq: uint32(time.Now().UnixNano()), buf: make([]byte, 64<<10)}, nil
}

// Close closes the socket. After a transaction that deleted anything, the
// close waits in the kernel for the deleted objects' release (see Conn):
// the call that deleted them pays it, as every nftables client does.
func (n *Conn) Close() {
	if n == nil || n.sock == nil || n.sock == closed {
		return
	}
	n.sock.close()
	n.sock = closed // later calls fail with EBADF, as on a closed descriptor
}

// send writes messages in one datagram, numbering them; it returns the
// first sequence number.
func (n *Conn) send(msgs []netlink.Message) (uint32, error) {
	first := n.seq + 1
	var out []byte
	for _, m := range msgs {
		n.seq++
		m.Header.Sequence = n.seq
		m.Header.Length = uint32(16 + len(m.Data))
		b, err := m.MarshalBinary()
		if err != nil {
			return 0, err
		}
		out = append(out, b...)
	}
	if err := n.sock.sendto(out); err != nil {
		return 0, fmt.Errorf("netlink send: %w", err)
	}
	return first, nil
}

// recv reads one datagram and returns its messages.
func (n *Conn) recv() ([]netlink.Message, error) { return n.recvFlags(0) }

// recvFlags is recv with recvfrom's flags (unix.MSG_DONTWAIT: EAGAIN
// rather than a wait when nothing is queued).
func (n *Conn) recvFlags(flags int) ([]netlink.Message, error) {
	for {
		nr, err := n.sock.recvfrom(n.buf, flags)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("netlink receive: %w", err)
		}
		var out []netlink.Message
		for b := n.buf[:nr]; len(b) >= 16; {
			l := int(binary.NativeEndian.Uint32(b[:4]))
			if l < 16 || l > len(b) {
				return nil, fmt.Errorf("netlink receive: bad message length %d", l)
			}
			var m netlink.Message
			if err := m.UnmarshalBinary(b[:l]); err != nil {
				return nil, err
			}
			m.Data = append([]byte(nil), m.Data...)
			out = append(out, m)
			b = b[(l+3)&^3:]
		}
		return out, nil
	}
}

// errno returns the error an NLMSG_ERROR message carries (nil for an ack).
func errno(m netlink.Message) error {
	if len(m.Data) < 4 {
		return fmt.Errorf("netlink: short error message")
	}
	if c := int32(binary.NativeEndian.Uint32(m.Data[:4])); c != 0 {
		return unix.Errno(-c)
	}
	return nil
}

// execute sends one request and collects its answers: the messages of a
// dump up to NLMSG_DONE, or the one reply, or the kernel's error.
func (n *Conn) execute(m netlink.Message) ([]netlink.Message, error) {
	seq, err := n.send([]netlink.Message{m})
	if err != nil {
		return nil, err
	}
	var out []netlink.Message
	for {
		msgs, err := n.recv()
		if err != nil {
			return nil, err
		}
		for _, r := range msgs {
			if r.Header.Sequence != seq {
				continue // a late answer to an earlier request
			}
			switch r.Header.Type {
			case netlink.Error:
				if err := errno(r); err != nil {
					return nil, err
				}
				return out, nil
			case netlink.Done:
				return out, nil
			}
			out = append(out, r)
			if r.Header.Flags&netlink.Multi == 0 {
				return out, nil
			}
		}
	}
}

func nftMsgType(msg int) netlink.HeaderType {
	return netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | msg)
}

// nfgen is the nfgenmsg header every nftables message starts with.
func nfgen(family byte) []byte { return []byte{family, unix.NFNETLINK_V0, 0, 0} }

func encodeAttrs(fn func(ae *netlink.AttributeEncoder)) []byte {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		// Only an attribute too long for netlink fails; names are short.
		panic(fmt.Sprintf("encoding netlink attributes: %v", err))
	}
	return b
}

// ChainExists asks for one chain by name.
// Equivalent to: nft list chain <family> <table> <chain> (without rules)
func (n *Conn) ChainExists(family byte, table, chain string) (bool, error) {
	ok, _, err := n.ChainUse(family, table, chain)
	return ok, err
}

// TableExists asks for one table by name.
// Equivalent to: nft list table <family> <table> (without its contents)
func (n *Conn) TableExists(family byte, table string) (bool, error) {
	if len(table) > maxName {
		return false, nil
	}
	data := encodeAttrs(func(ae *netlink.AttributeEncoder) { ae.String(unix.NFTA_TABLE_NAME, table) })
	_, err := n.execute(netlink.Message{
		Header: netlink.Header{Type: nftMsgType(unix.NFT_MSG_GETTABLE), Flags: netlink.Request},
		Data:   append(nfgen(family), data...),
	})
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up table %s: %w", table, err)
	}
	return true, nil
}

// maxName is the longest table or chain name the kernel keeps
// (NFT_NAME_MAXLEN, 256, with its terminating NUL).
const maxName = 255

// ChainUse looks one chain up and returns its use count: the number of
// its rules plus the jumps, gotos and map elements leading to it. A name
// longer than the kernel allows names no chain: the kernel would refuse
// the question (ERANGE) rather than say so.
func (n *Conn) ChainUse(family byte, table, chain string) (exists bool, use uint32, err error) {
	found, uses, err := n.ChainUses([]ChainRef{{Family: family, Table: table, Chain: chain}})
	if err != nil {
		return false, 0, err
	}
	return found[0], uses[0], nil
}

// ChainRef names a chain: its family, table and name.
type ChainRef struct {
	Family       byte
	Table, Chain string
}

// ChainUses is ChainUse for many chains, with one datagram of requests
// and their answers, in order: a lookup costs a netlink round trip, and an
// ADD looks up a dozen chains, most of which do not exist.
func (n *Conn) ChainUses(refs []ChainRef) (exists []bool, uses []uint32, err error) {
	exists, uses = make([]bool, len(refs)), make([]uint32, len(refs))
	var msgs []netlink.Message
	var asked []int // the index in refs of each request
	for i, r := range refs {
		if len(r.Table) > maxName || len(r.Chain) > maxName {
			continue // names no chain (ChainUse)
		}
		msgs = append(msgs, chainRequest(r.Family, r.Table, r.Chain))
		asked = append(asked, i)
	}
	if len(msgs) == 0 {
		return exists, uses, nil
	}
	first, err := n.send(msgs)
	if err != nil {
		return nil, nil, err
	}
	for answered := 0; answered < len(msgs); {
		got, err := n.recv()
		if err != nil {
			return nil, nil, err
		}
		for _, m := range got {
			k := m.Header.Sequence - first // wraps as the numbers do
			if k >= uint32(len(msgs)) {
				continue // a late answer to an earlier request
			}
			answered++
			i := asked[k]
			if m.Header.Type == netlink.Error {
				if err := errno(m); err != nil && !errors.Is(err, unix.ENOENT) {
					r := refs[i]
					return nil, nil, fmt.Errorf("looking up chain %s %s: %w", r.Table, r.Chain, err)
				}
				continue
			}
			exists[i] = true
			if len(m.Data) >= 4 {
				if uses[i], err = chainUseOf(m.Data[4:]); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return exists, uses, nil
}

// chainRequest asks for one chain by name.
func chainRequest(family byte, table, chain string) netlink.Message {
	data := encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_TABLE, table)
		ae.String(unix.NFTA_CHAIN_NAME, chain)
	})
	return netlink.Message{
		Header: netlink.Header{Type: nftMsgType(unix.NFT_MSG_GETCHAIN), Flags: netlink.Request},
		Data:   append(nfgen(family), data...),
	}
}

// chainUseOf reads NFTA_CHAIN_USE from a chain's attributes.
func chainUseOf(attrs []byte) (uint32, error) {
	ad, err := netlink.NewAttributeDecoder(attrs)
	if err != nil {
		return 0, err
	}
	ad.ByteOrder = binary.BigEndian
	var use uint32
	for ad.Next() {
		if ad.Type() == unix.NFTA_CHAIN_USE {
			use = ad.Uint32()
		}
	}
	return use, nil
}

// Chains dumps the names of the chains of one table.
// Equivalent to: nft list table <family> <table> (chain names only)
func (n *Conn) Chains(family byte, table string) ([]string, error) {
	msgs, err := n.execute(netlink.Message{
		Header: netlink.Header{Type: nftMsgType(unix.NFT_MSG_GETCHAIN), Flags: netlink.Request | netlink.Dump},
		Data:   nfgen(family),
	})
	if err != nil {
		return nil, fmt.Errorf("listing chains of %s: %w", table, err)
	}
	var out []string
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[4:])
		if err != nil {
			return nil, err
		}
		var inTable, name string
		for ad.Next() {
			switch ad.Type() {
			case unix.NFTA_CHAIN_TABLE:
				inTable = ad.String()
			case unix.NFTA_CHAIN_NAME:
				name = ad.String()
			}
		}
		if inTable == table { // the kernel dumps every table's chains
			out = append(out, name)
		}
	}
	return out, nil
}

// Rules dumps the rules of one chain, decoding only what Rule holds, so
// that no expression (ours or one a user put in conditions) can make the
// listing fail. A missing table or chain yields no rules.
// Equivalent to: nft -a list chain <family> <table> <chain>
func (n *Conn) Rules(family byte, table, chain string) ([]Rule, error) {
	if len(table) > maxName || len(chain) > maxName {
		return nil, nil
	}
	data := encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, table)
		ae.String(unix.NFTA_RULE_CHAIN, chain)
	})
	msgs, err := n.execute(netlink.Message{
		Header: netlink.Header{Type: nftMsgType(unix.NFT_MSG_GETRULE), Flags: netlink.Request | netlink.Dump},
		Data:   append(nfgen(family), data...),
	})
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing rules of %s %s: %w", table, chain, err)
	}
	var out []Rule
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		r, err := decodeRule(m.Data[4:])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// RuleByHandle reads one rule of a chain by its handle; false when the
// chain or the rule does not exist.
// Equivalent to: nft -a list chain <family> <table> <chain> | grep "handle <handle>"
func (n *Conn) RuleByHandle(family byte, table, chain string, handle uint64) (Rule, bool, error) {
	if len(table) > maxName || len(chain) > maxName {
		return Rule{}, false, nil
	}
	data := encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_RULE_TABLE, table)
		ae.String(unix.NFTA_RULE_CHAIN, chain)
		ae.Uint64(unix.NFTA_RULE_HANDLE, handle)
	})
	msgs, err := n.execute(netlink.Message{
		Header: netlink.Header{Type: nftMsgType(unix.NFT_MSG_GETRULE), Flags: netlink.Request},
		Data:   append(nfgen(family), data...),
	})
	if errors.Is(err, unix.ENOENT) || err == nil && (len(msgs) == 0 || len(msgs[0].Data) < 4) {
		return Rule{}, false, nil
	}
	if err != nil {
		return Rule{}, false, fmt.Errorf("reading rule %d of %s %s: %w", handle, table, chain, err)
	}
	r, err := decodeRule(msgs[0].Data[4:])
	return r, err == nil, err
}
