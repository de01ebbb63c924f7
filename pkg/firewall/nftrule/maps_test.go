package nftrule_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"cnisuite/pkg/firewall/nftmodel"
	"cnisuite/pkg/firewall/nftrule"
)

// Our tables, as nftmodel names them.
var (
	masq4, port4, port6 = nftmodel.Masq4, nftmodel.Port4, nftmodel.Port6
	spoof, iso          = nftmodel.Spoof, nftmodel.IsoInet
)

// TestElemKeys checks the encoding of each kind of key and value against
// nft's (`nft --debug=netlink add element …`).
func TestElemKeys(t *testing.T) {
	tests := []struct {
		table          nftrule.Table
		el             nftrule.Elem
		key, end, data string
	}{
		{masq4, nftrule.Elem{Set: "masq", Key: "10.88.0.2"}, "0a580002", "", ""},
		{port4, nftrule.Elem{Set: "ports", Key: "tcp . 8080"}, "06000000" + "1f900000", "", ""},
		{port4, nftrule.Elem{Set: "hostip_ports", Key: "192.0.2.10 . udp . 53"}, "c000020a" + "11000000" + "00350000", "", ""},
		{port6, nftrule.Elem{Set: "hairpins", Key: "fd00::2 . sctp . 80"}, "fd000000000000000000000000000002" + "84000000" + "00500000", "", ""},
		{spoof, nftrule.Elem{Set: "ifaces", Key: `"veth1"`}, "7665746831" + strings.Repeat("00", 11), "", ""},
		{iso, nftrule.Elem{Set: "icc_addrs4", Key: "10.88.0.2"}, "0a580002", "", ""},
		{iso, nftrule.Elem{Set: "icc_addrs6", Key: "fd00::2"}, "fd000000000000000000000000000002", "", ""},
		// Data maps and sets of the data-map layout.
		{port4, nftrule.Elem{Set: "port_dnat", Key: "tcp . 8080", Data: "10.88.0.2 . 80"}, "06000000" + "1f900000", "", "0a580002" + "00500000"},
		{port4, nftrule.Elem{Set: "range_dnat", Key: "tcp . 8000-8100", Data: "10.88.0.2"}, "06000000" + "1f400000", "06000000" + "1fa40000", "0a580002"},
		{port6, nftrule.Elem{Set: "port_dnat", Key: "udp . 53", Data: "fd00::2 . 5353"}, "11000000" + "00350000", "", "fd000000000000000000000000000002" + "14e90000"},
		{masq4, nftrule.Elem{Set: "masq_nets", Key: "10.88.0.0/16 . 10.88.0.0/16"}, "0a580000" + "0a580000", "0a58ffff" + "0a58ffff", ""},
		{masq4, nftrule.Elem{Set: "snat_to", Key: "10.88.0.2", Data: "192.0.2.7"}, "0a580002", "", "c0000207"},
		{port4, nftrule.Elem{Set: "hairpin", Key: "10.88.0.2 . tcp . 80"}, "0a580002" + "06000000" + "00500000", "", ""},
		{port4, nftrule.Elem{Set: "hairpin_masq", Key: "10.88.0.2 . tcp . 8000-8009 . 0.0.0.0/0"},
			"0a580002" + "06000000" + "1f400000" + "00000000", "0a580002" + "06000000" + "1f490000" + "ffffffff", ""},
	}
	for _, tc := range tests {
		key, end, err := nftrule.ElemKeys(tc.table, tc.el)
		data, derr := nftrule.ElemData(tc.table, tc.el)
		if err != nil || derr != nil || hex.EncodeToString(key) != tc.key || hex.EncodeToString(end) != tc.end || hex.EncodeToString(data) != tc.data {
			t.Errorf("%s %v: key %x, end %x, data %x (%v, %v); want %s, %s, %s", tc.table, tc.el, key, end, data, err, derr, tc.key, tc.end, tc.data)
		}
	}
	for _, bad := range []nftrule.Elem{
		{Set: "ports", Key: "tcp . 99999"},
		{Set: "icc_addrs4", Key: "fd00::2"},
		{Set: "range_dnat", Key: "tcp . 8100-8000", Data: "10.88.0.2"},
		{Set: "port_dnat", Key: "tcp . 80", Data: "10.88.0.2"}, // a value without its port
	} {
		_, _, err := nftrule.ElemKeys(port4, bad)
		if _, derr := nftrule.ElemData(port4, bad); err == nil && derr == nil {
			t.Errorf("%v was encoded", bad)
		}
	}
}
