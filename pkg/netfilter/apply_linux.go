package netfilter

import (
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// A transaction is one datagram: nfnetlink commits a batch only when its
// BATCH_END is in the same datagram as its BATCH_BEGIN, so a transaction
// cannot be spread over several sends (tried on Linux 6.18: a datagram of
// BATCH_BEGIN and an add table, then one of BATCH_END, creates no table,
// and the lone BATCH_END is refused with EINVAL). What limits it is the
// socket, on both sides:
//
//   - the datagram must fit the send buffer (net.core.wmem_default, 208 KiB:
//     about 500 port mappings), else sendto fails with EMSGSIZE; the
//     buffer is grown to the datagram (SO_SNDBUFFORCE, which CAP_NET_ADMIN
//     may set past net.core.wmem_max) before it is sent;
//   - the kernel handles the whole batch inside sendto and queues its
//     answers on the socket, which nobody reads until sendto returns:
//     answers past the receive buffer (net.core.rmem_default) are dropped.
//     An ack for each of a few hundred messages overflowed it: the kernel
//     committed, its last acks were lost, and the caller waited for them
//     in vain and reported a failure. So only the last message asks for an
//     ack (the kernel answers a refused message whatever its flags, and
//     answers in order, so the last ack comes after every error), and the
//     receive buffer is grown for the rules echoed back.
//
// Measured with 10,000 single port mappings on nftables (40,009 messages):
// an ack per message queued 33 MB on the socket (832 bytes each) before the
// first was read, and its ADD took 1.19–1.30 s against 1.11–1.16 s with
// the one ack (three rounds each on a busy shared machine); see
// test/bench/RESULTS.md, round 18b.

// ackRoom is the receive buffer one answer of a transaction may take (an
// echoed rule or an ack, with the kernel's bookkeeping of its buffer).
const ackRoom = 4 << 10

// smallBuf is less than any node's default socket buffers
// (net.core.wmem_default and rmem_default are 208 KiB): a transaction that
// needs no more never asks.
const smallBuf = 64 << 10

// Apply sends the batch as one transaction and waits for the kernel's
// answer: all of it is applied, or none.
func (n *Conn) Apply(b *Batch) error {
	_, err := n.ApplyEcho(b)
	return err
}

// ApplyEcho is Apply, returning the rules the kernel echoed (those added
// with AddXTRuleEcho), handles included.
func (n *Conn) ApplyEcho(b *Batch) ([]Rule, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.Empty() {
		return nil, nil
	}
	begin := netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN), Flags: netlink.Request},
		Data:   []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, unix.NFNL_SUBSYS_NFTABLES},
	}
	end := begin
	end.Header.Type = netlink.HeaderType(unix.NFNL_MSG_BATCH_END)
	msgs := make([]netlink.Message, 0, len(b.msgs)+2)
	msgs = append(append(append(msgs, begin), b.msgs...), end)
	msgs[len(msgs)-2].Header.Flags |= netlink.Acknowledge
	if err := n.fit(msgs, 1+b.echoes); err != nil {
		return nil, fmt.Errorf("sending nftables transaction of %d messages: %w", len(b.msgs), err)
	}
	first, err := n.send(msgs)
	if err != nil {
		return nil, fmt.Errorf("sending nftables transaction of %d messages: %w", len(b.msgs), err)
	}
	echoed, err := n.answers(first, uint32(len(b.msgs)))
	if err != nil {
		return nil, fmt.Errorf("nftables transaction of %d messages: %w", len(b.msgs), err)
	}
	return echoed, nil
}

// answers reads the kernel's answers to the transaction whose BATCH_BEGIN
// is numbered first and whose messages are first+1 … first+count: the
// rules echoed, an error for each message refused (or, numbered first, for
// a commit that failed), then the ack of the last message. The kernel
// queued them all before sendto returned, so once an error is in (and the
// last ack may never come: some errors end the batch early), the rest is
// read without waiting.
func (n *Conn) answers(first, count uint32) ([]Rule, error) {
	var errs []error
	var echoed []Rule
	overflow := false
	for {
		flags := 0
		if len(errs) > 0 || overflow {
			flags = unix.MSG_DONTWAIT
		}
		msgs, err := n.recvFlags(flags)
		switch {
		case errors.Is(err, unix.ENOBUFS):
			overflow = true // answers were dropped; read what is left
			continue
		case errors.Is(err, unix.EAGAIN) && flags != 0:
			if len(errs) == 0 {
				return nil, fmt.Errorf("the kernel's answers overflowed the socket (%w): whether it committed is unknown", unix.ENOBUFS)
			}
			return nil, errors.Join(errs...)
		case err != nil:
			return nil, errors.Join(append(errs, fmt.Errorf("waiting for the kernel: %w", err))...)
		}
		done := false
		for _, m := range msgs {
			k := m.Header.Sequence - first // wraps as the numbers do
			switch {
			case k > count:
			case m.Header.Type == nftMsgType(unix.NFT_MSG_NEWRULE) && len(m.Data) >= 4:
				if r, err := decodeRule(m.Data[4:]); err == nil {
					echoed = append(echoed, r)
				}
			case m.Header.Type == netlink.Error:
				if err := errno(m); err != nil {
					errs = append(errs, err)
				}
				done = done || k == count
			}
		}
		if done {
			return echoed, errors.Join(errs...)
		}
	}
}

// fit grows the socket's buffers for a transaction: the send buffer to the
// datagram, the receive buffer to the answers expected of a transaction
// that succeeds. Past the node's limits (net.core.wmem_max, rmem_max),
// only CAP_NET_ADMIN may grow them: without it (a rootless runtime), a
// datagram too large is refused here, before anything is sent.
func (n *Conn) fit(msgs []netlink.Message, answers int) error {
	size := 0
	for _, m := range msgs {
		size += 16 + (len(m.Data)+3)&^3
	}
	// The kernel refuses a datagram longer than the send buffer less 32
	// bytes.
	if err := n.grow(unix.SO_SNDBUF, unix.SO_SNDBUFFORCE, &n.sndbuf, size+32); err != nil {
		return err
	}
	if n.sndbuf != 0 && n.sndbuf < size+32 {
		return fmt.Errorf("a datagram of %d bytes, past the socket's send buffer of %d (net.core.wmem_max limits it without CAP_NET_ADMIN): %w",
			size, n.sndbuf, unix.EMSGSIZE)
	}
	return n.grow(unix.SO_RCVBUF, unix.SO_RCVBUFFORCE, &n.rcvbuf, answers*ackRoom)
}

// grow sets a socket buffer (opt, or force past the node's limit) to at
// least want bytes unless it holds as much; *have is its size, 0 until
// read.
func (n *Conn) grow(opt, force int, have *int, want int) error {
	if want <= smallBuf {
		return nil
	}
	var err error
	if *have == 0 {
		if *have, err = n.sock.getsockopt(opt); err != nil {
			return fmt.Errorf("reading the socket's buffer: %w", err)
		}
	}
	if want <= *have {
		return nil
	}
	half := (want + 1) / 2 // the kernel keeps twice what it is given
	if err = n.sock.setsockopt(force, half); err != nil {
		err = n.sock.setsockopt(opt, half)
	}
	if err != nil {
		return fmt.Errorf("a socket buffer of %d bytes: %w", want, err)
	}
	if *have, err = n.sock.getsockopt(opt); err != nil {
		return fmt.Errorf("reading the socket's buffer: %w", err)
	}
	return nil
}
