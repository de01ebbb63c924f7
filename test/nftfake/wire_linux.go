package nftfake

import (
	"encoding/binary"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The netlink framing of the fake's side: the datagrams a Conn sends are
// split into messages, the answers are framed as the kernel frames them.

// portID is the netlink port the fake's answers go to (the kernel's is
// the socket's; a Conn does not read it).
const portID = 4242

// dumpDatagram is the most a datagram of a dump holds: the kernel fills
// each up to 32 KiB for a reader with a buffer as large as Conn's.
const dumpDatagram = 32 << 10

// splitMessages splits a datagram into its netlink messages.
func splitMessages(b []byte) ([]netlink.Message, error) {
	var out []netlink.Message
	for len(b) >= 16 {
		l := int(binary.NativeEndian.Uint32(b[:4]))
		if l < 16 || l > len(b) {
			return nil, fmt.Errorf("nftfake: bad message length %d", l)
		}
		out = append(out, netlink.Message{
			Header: netlink.Header{
				Length:   uint32(l),
				Type:     netlink.HeaderType(binary.NativeEndian.Uint16(b[4:6])),
				Flags:    netlink.HeaderFlags(binary.NativeEndian.Uint16(b[6:8])),
				Sequence: binary.NativeEndian.Uint32(b[8:12]),
				PID:      binary.NativeEndian.Uint32(b[12:16]),
			},
			Data: b[16:l],
		})
		b = b[min((l+3)&^3, len(b)):]
	}
	return out, nil
}

// frame encodes one message as the kernel does: its length without the
// padding to four bytes that follows it.
func frame(typ netlink.HeaderType, flags netlink.HeaderFlags, seq uint32, data []byte) []byte {
	b := make([]byte, 16, 16+len(data)+3)
	binary.NativeEndian.PutUint32(b[0:4], uint32(16+len(data)))
	binary.NativeEndian.PutUint16(b[4:6], uint16(typ))
	binary.NativeEndian.PutUint16(b[6:8], uint16(flags))
	binary.NativeEndian.PutUint32(b[8:12], seq)
	binary.NativeEndian.PutUint32(b[12:16], portID)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// ack is the kernel's answer to a message: NLMSG_ERROR with the errno
// (0 for an ack) and the request's header; a refused request's whole
// message follows, an ack's is capped to the header.
func ack(req netlink.Message, err error) []byte {
	code := int32(0)
	if err != nil {
		code = -int32(errnoOf(err))
	}
	data := binary.NativeEndian.AppendUint32(nil, uint32(code))
	hdr := frame(req.Header.Type, req.Header.Flags, req.Header.Sequence, nil)
	binary.NativeEndian.PutUint32(hdr[0:4], req.Header.Length)
	binary.NativeEndian.PutUint32(hdr[12:16], req.Header.PID)
	data = append(data, hdr...)
	flags := netlink.HeaderFlags(0)
	if err == nil {
		flags = netlink.Capped
	} else {
		data = append(data, req.Data...)
	}
	return frame(netlink.Error, flags, req.Header.Sequence, data)
}

// errnoOf returns the errno an error of the fake's carries (EINVAL for
// one that carries none: a message the fake cannot read).
func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EINVAL
}

// dump frames the messages of a dump as the kernel sends them: each
// NLM_F_MULTI, packed into datagrams of at most dumpDatagram bytes, then
// NLMSG_DONE.
func dump(seq uint32, typ netlink.HeaderType, bodies [][]byte) [][]byte {
	var out [][]byte
	var cur []byte
	for _, body := range bodies {
		m := frame(typ, netlink.Multi, seq, body)
		if len(cur) > 0 && len(cur)+len(m) > dumpDatagram {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, m...)
	}
	done := frame(netlink.Done, netlink.Multi, seq, []byte{0, 0, 0, 0})
	if len(cur)+len(done) > dumpDatagram {
		out = append(out, cur)
		cur = nil
	}
	return append(out, append(cur, done...))
}

// msgType is the header type of an nftables message.
func msgType(msg int) netlink.HeaderType {
	return netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | msg)
}

// attrs holds the top-level attributes of a message by type (flags
// masked off), each as its payload.
type attrs map[uint16][]byte

func parseAttrs(b []byte) (attrs, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, unix.EINVAL
	}
	a := attrs{}
	for ad.Next() {
		a[ad.Type()] = ad.Bytes()
	}
	if ad.Err() != nil {
		return nil, unix.EINVAL
	}
	return a, nil
}

// str returns a string attribute without its terminating NUL.
func (a attrs) str(t uint16) (string, bool) {
	b, ok := a[t]
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	return string(b), ok
}

func (a attrs) u32(t uint16) (uint32, bool) {
	b, ok := a[t]
	if !ok || len(b) < 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b), true
}

func (a attrs) u64(t uint16) (uint64, bool) {
	b, ok := a[t]
	if !ok || len(b) < 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

// list returns the payloads of the attributes nested in b, in order (a
// NFTA_LIST_ELEM list).
func list(b []byte) ([][]byte, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, unix.EINVAL
	}
	var out [][]byte
	for ad.Next() {
		out = append(out, ad.Bytes())
	}
	if ad.Err() != nil {
		return nil, unix.EINVAL
	}
	return out, nil
}

// encode builds attributes in the kernel's byte order.
func encode(fn func(ae *netlink.AttributeEncoder)) []byte {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		panic(fmt.Sprintf("nftfake: encoding attributes: %v", err))
	}
	return b
}

// raw adds a nested attribute whose payload is already encoded.
func raw(ae *netlink.AttributeEncoder, t uint16, b []byte) {
	ae.Do(unix.NLA_F_NESTED|t, func() ([]byte, error) { return b, nil })
}

// nfgen is the nfgenmsg header of an answer about a table of family.
func nfgen(family byte) []byte { return []byte{family, unix.NFNETLINK_V0, 0, 0} }
