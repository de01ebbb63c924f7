package firewall

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

// nlConn is the one netfilter netlink socket a call reads and writes with.
//
// A socket is cheap to open, but closing a netfilter socket after a
// transaction that deleted anything waits in the kernel for the deferred
// release of the deleted objects (an RCU grace period: nft_rcv_nl_event
// flushes the nf_tables destroy work). One socket per call pays that wait
// once, at exit, instead of after every request.
type nlConn struct {
	c *netlink.Conn
}

func dialNL() (*nlConn, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return nil, fmt.Errorf("netlink to nftables: %w", err)
	}
	return &nlConn{c: c}, nil
}

func (n *nlConn) close() {
	if n != nil && n.c != nil {
		_ = n.c.Close()
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

func (n *nlConn) execute(m netlink.Message) ([]netlink.Message, error) {
	if err := n.c.SetDeadline(time.Now().Add(nlTimeout)); err != nil {
		return nil, err
	}
	return n.c.Execute(m)
}

// chainExists asks for one chain by name.
// Equivalent to: nft list chain <family> <table> <chain> (without rules)
func (n *nlConn) chainExists(family byte, table, chain string) (bool, error) {
	data := encodeAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(unix.NFTA_CHAIN_TABLE, table)
		ae.String(unix.NFTA_CHAIN_NAME, chain)
	})
	_, err := n.execute(netlink.Message{
		Header: netlink.Header{Type: nftMsgType(unix.NFT_MSG_GETCHAIN), Flags: netlink.Request},
		Data:   append(nfgen(family), data...),
	})
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up chain %s %s: %w", table, chain, err)
	}
	return true, nil
}

// rules dumps the rules of one chain, decoding only what nlRule holds, so
// that no expression (ours or one a user put in conditions) can make the
// listing fail. A missing table or chain yields no rules.
// Equivalent to: nft -a list chain <family> <table> <chain>
func (n *nlConn) rules(family byte, table, chain string) ([]nlRule, error) {
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
	var out []nlRule
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		r, err := decodeNLRule(m.Data[4:])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// apply sends the batch as one transaction and waits for the kernel's
// answer to each message: all of it is applied, or none.
func (n *nlConn) apply(b *nlBatch) error {
	if b.err != nil {
		return b.err
	}
	if b.empty() {
		return nil
	}
	begin := netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN), Flags: netlink.Request},
		Data:   []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, unix.NFNL_SUBSYS_NFTABLES},
	}
	end := begin
	end.Header.Type = netlink.HeaderType(unix.NFNL_MSG_BATCH_END)
	msgs := append(append([]netlink.Message{begin}, b.msgs...), end)
	if err := n.c.SetDeadline(time.Now().Add(nlTimeout)); err != nil {
		return err
	}
	if _, err := n.c.SendMessages(msgs); err != nil {
		return fmt.Errorf("sending nftables transaction: %w", err)
	}
	var errs []error
	for acked := 0; acked < len(b.msgs); {
		replies, err := n.c.Receive()
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ETIMEDOUT) || isTimeout(err) {
				errs = append(errs, fmt.Errorf("waiting for the kernel: %w", err))
				break
			}
			errs = append(errs, err)
			acked++
			continue
		}
		acked += len(replies)
	}
	if len(errs) > 0 {
		return fmt.Errorf("nftables transaction of %d messages: %w", len(b.msgs), errors.Join(errs...))
	}
	return nil
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// listRules is rules on a socket of its own.
func listRules(family byte, table, chain string) ([]nlRule, error) {
	conn, err := dialNL()
	if err != nil {
		return nil, err
	}
	defer conn.close()
	return conn.rules(family, table, chain)
}
