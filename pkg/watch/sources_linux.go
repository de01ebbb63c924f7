package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/godbus/dbus/v5"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

func sources() []source {
	return []source{
		{"nftables events", nftEvents},
		{"netconf events", netconfEvents},
		{"firewalld", firewalldReloads},
	}
}

// subscription is what a source listens to: the multicast groups of a
// netlink family, and which of their messages are events (match returns
// why, or "").
type subscription struct {
	family int
	groups []uint32
	match  func(netlink.Message) string
}

// receive joins the groups of s and calls s.match on every message until
// ctx ends; an overflowed socket (a flush of a large ruleset) counts as an
// event.
func receive(ctx context.Context, s subscription, ready func(), notify func(string)) error {
	c, err := netlink.Dial(s.family, nil)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	for _, g := range s.groups {
		if err := c.JoinGroup(g); err != nil {
			c.Close()
			return fmt.Errorf("joining group %d: %w", g, err)
		}
	}
	_ = c.SetReadBuffer(1 << 20) // a smaller buffer only overflows sooner
	ready()
	for {
		msgs, err := c.Receive()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, unix.ENOBUFS) {
			notify("events overflowed")
			continue
		}
		if err != nil {
			c.Close()
			return err
		}
		for _, m := range msgs {
			if why := s.match(m); why != "" {
				notify(why)
			}
		}
	}
}

func nftEvents(ctx context.Context, ready func(), notify func(string)) error {
	return receive(ctx, subscription{unix.NETLINK_NETFILTER, []uint32{unix.NFNLGRP_NFTABLES}, nftDeletion}, ready, notify)
}

// The attributes read from nftables events: the table is attribute 1 of
// tables, chains, rules, sets and element lists; the chain's name is 3
// (NFTA_CHAIN_NAME), a rule's chain 2 (NFTA_RULE_CHAIN).
const (
	attrTable     = 1
	attrRuleChain = 2
	attrChainName = 3
)

// deletions are the nftables messages that can take something of ours.
var deletions = map[uint16]string{
	unix.NFT_MSG_DELTABLE: "table", unix.NFT_MSG_DELCHAIN: "chain", unix.NFT_MSG_DELRULE: "rule",
	unix.NFT_MSG_DELSET: "set", unix.NFT_MSG_DELSETELEM: "set element",
}

// nftDeletion returns why m may have taken something of ours, or "".
func nftDeletion(m netlink.Message) string {
	typ := uint16(m.Header.Type)
	kind, ok := deletions[typ&0xff]
	if typ>>8 != unix.NFNL_SUBSYS_NFTABLES || !ok || len(m.Data) < 4 {
		return ""
	}
	ad, err := netlink.NewAttributeDecoder(m.Data[4:])
	if err != nil {
		return ""
	}
	var table, chain string
	for ad.Next() {
		switch {
		case ad.Type() == attrTable:
			table = ad.String()
		case ad.Type() == attrRuleChain && typ&0xff == unix.NFT_MSG_DELRULE,
			ad.Type() == attrChainName && typ&0xff == unix.NFT_MSG_DELCHAIN:
			chain = ad.String()
		}
	}
	if !ours(table, chain, typ&0xff) {
		return ""
	}
	return fmt.Sprintf("nftables %s deleted in %s %s", kind, table, chain)
}

// ours reports whether a deletion in table (and chain) touches our
// objects: our own tables, or in iptables-nft's nat table our CNIS-
// chains and the base chains that jump to them.
func ours(table, chain string, msg uint16) bool {
	if strings.HasPrefix(table, "cnisuite") {
		return true
	}
	if table != "nat" {
		return false
	}
	switch {
	case msg == unix.NFT_MSG_DELTABLE:
		return true
	case strings.HasPrefix(chain, "CNIS-"):
		return true
	}
	switch chain {
	case "POSTROUTING", "PREROUTING", "OUTPUT":
		return true
	}
	return false
}

// netconfIfindexAll is NETCONFA_IFINDEX_ALL: the "all" settings.
const netconfIfindexAll = -1

// Attributes of netconf messages (NETCONFA_IFINDEX, NETCONFA_FORWARDING).
const (
	attrNetconfIfindex    = 1
	attrNetconfForwarding = 2
)

func netconfEvents(ctx context.Context, ready func(), notify func(string)) error {
	return receive(ctx, subscription{unix.NETLINK_ROUTE, []uint32{unix.RTNLGRP_IPV4_NETCONF, unix.RTNLGRP_IPV6_NETCONF}, forwardingOff}, ready, notify)
}

// forwardingOff returns why m says forwarding of "all" went off, or "".
func forwardingOff(m netlink.Message) string {
	if uint16(m.Header.Type) != unix.RTM_NEWNETCONF || len(m.Data) < 4 {
		return ""
	}
	ad, err := netlink.NewAttributeDecoder(m.Data[4:]) // struct netconfmsg, padded
	if err != nil {
		return ""
	}
	all, off := false, false
	for ad.Next() {
		switch ad.Type() {
		case attrNetconfIfindex:
			all = int32(ad.Uint32()) == netconfIfindexAll
		case attrNetconfForwarding:
			off = ad.Uint32() == 0
		}
	}
	if !all || !off {
		return ""
	}
	family := "IPv4"
	if m.Data[0] == unix.AF_INET6 {
		family = "IPv6"
	}
	return family + " forwarding turned off"
}

// firewalldReloads notifies on firewalld's Reloaded signal. Without a
// system bus it returns at once: there is no firewalld to listen to.
func firewalldReloads(ctx context.Context, ready func(), notify func(string)) error {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("no system bus: %w", err)
	}
	defer conn.Close()
	if err := conn.AddMatchSignal(dbus.WithMatchInterface("org.fedoraproject.FirewallD1"), dbus.WithMatchMember("Reloaded")); err != nil {
		return err
	}
	signals := make(chan *dbus.Signal, 4)
	conn.Signal(signals)
	ready()
	for {
		select {
		case <-ctx.Done():
			return nil
		case s, ok := <-signals:
			if !ok {
				return errors.New("system bus connection closed")
			}
			if s.Name == "org.fedoraproject.FirewallD1.Reloaded" {
				notify("firewalld reloaded")
			}
		}
	}
}
