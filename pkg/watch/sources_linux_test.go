package watch

import (
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// nftMsg builds an nftables event of type typ with the given attributes.
func nftMsg(t *testing.T, typ uint16, attrs map[uint16]string) netlink.Message {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	for k, v := range attrs {
		ae.String(k, v)
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | typ)},
		Data: append([]byte{unix.AF_INET, 0, 0, 0}, b...)}
}

func TestNFTDeletion(t *testing.T) {
	tests := []struct {
		name  string
		typ   uint16
		attrs map[uint16]string
		ours  bool
	}{
		{"our table deleted", unix.NFT_MSG_DELTABLE, map[uint16]string{attrTable: "cnisuite_portmap"}, true},
		{"our rule deleted", unix.NFT_MSG_DELRULE, map[uint16]string{attrTable: "cnisuite_masq", attrRuleChain: "x"}, true},
		{"nat table deleted", unix.NFT_MSG_DELTABLE, map[uint16]string{attrTable: "nat"}, true},
		{"our iptables chain deleted", unix.NFT_MSG_DELCHAIN, map[uint16]string{attrTable: "nat", attrChainName: "CNIS-MQ-0123"}, true},
		{"a jump in POSTROUTING deleted", unix.NFT_MSG_DELRULE, map[uint16]string{attrTable: "nat", attrRuleChain: "POSTROUTING"}, true},
		{"kube-proxy's chain flushed", unix.NFT_MSG_DELRULE, map[uint16]string{attrTable: "nat", attrRuleChain: "KUBE-SERVICES"}, false},
		{"another table deleted", unix.NFT_MSG_DELTABLE, map[uint16]string{attrTable: "firewalld"}, false},
		{"our table created", unix.NFT_MSG_NEWTABLE, map[uint16]string{attrTable: "cnisuite_portmap"}, false},
	}
	for _, tc := range tests {
		if got := nftDeletion(nftMsg(t, tc.typ, tc.attrs)) != ""; got != tc.ours {
			t.Errorf("%s: nftDeletion says ours = %v, want %v", tc.name, got, tc.ours)
		}
	}
}

func netconfMsg(t *testing.T, family byte, ifindex int32, forwarding uint32) netlink.Message {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrNetconfIfindex, uint32(ifindex))
	ae.Uint32(attrNetconfForwarding, forwarding)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return netlink.Message{Header: netlink.Header{Type: unix.RTM_NEWNETCONF}, Data: append([]byte{family, 0, 0, 0}, b...)}
}

func TestForwardingOff(t *testing.T) {
	if got := forwardingOff(netconfMsg(t, unix.AF_INET, netconfIfindexAll, 0)); got != "IPv4 forwarding turned off" {
		t.Errorf("all/forwarding 0: %q", got)
	}
	if got := forwardingOff(netconfMsg(t, unix.AF_INET6, netconfIfindexAll, 0)); got != "IPv6 forwarding turned off" {
		t.Errorf("IPv6 all/forwarding 0: %q", got)
	}
	for _, m := range []netlink.Message{netconfMsg(t, unix.AF_INET, netconfIfindexAll, 1), netconfMsg(t, unix.AF_INET, 7, 0)} {
		if got := forwardingOff(m); got != "" {
			t.Errorf("forwarding on, or one device's: %q, want nothing", got)
		}
	}
}
