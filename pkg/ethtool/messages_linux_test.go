package ethtool

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// encode builds attributes with fn or fails the test.
func encode(t *testing.T, fn func(ae *netlink.AttributeEncoder)) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bitset is a compact bitset nest of size bits holding the bits set.
func bitset(size uint32, set ...int) func(*netlink.AttributeEncoder) error {
	return func(ae *netlink.AttributeEncoder) error {
		words := make([]byte, (size+31)/32*4)
		for _, i := range set {
			w := binary.NativeEndian.Uint32(words[i/32*4:])
			binary.NativeEndian.PutUint32(words[i/32*4:], w|1<<(i%32))
		}
		ae.Flag(unix.ETHTOOL_A_BITSET_NOMASK, true)
		ae.Uint32(unix.ETHTOOL_A_BITSET_SIZE, size)
		ae.Bytes(unix.ETHTOOL_A_BITSET_VALUE, words)
		return nil
	}
}

func TestDecodeStrsetAndFeatures(t *testing.T) {
	names := []string{"tx-scatter-gather", "tx-checksum-ipv4", "rx-gro"}
	strset := encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Nested(unix.ETHTOOL_A_STRSET_STRINGSETS, func(sets *netlink.AttributeEncoder) error {
			sets.Nested(unix.ETHTOOL_A_STRINGSETS_STRINGSET, func(set *netlink.AttributeEncoder) error {
				set.Uint32(unix.ETHTOOL_A_STRINGSET_ID, ethSSFeatures)
				set.Uint32(unix.ETHTOOL_A_STRINGSET_COUNT, uint32(len(names)))
				set.Nested(unix.ETHTOOL_A_STRINGSET_STRINGS, func(ss *netlink.AttributeEncoder) error {
					for i := len(names) - 1; i >= 0; i-- { // any order
						ss.Nested(unix.ETHTOOL_A_STRINGS_STRING, func(s *netlink.AttributeEncoder) error {
							s.Uint32(unix.ETHTOOL_A_STRING_INDEX, uint32(i))
							s.String(unix.ETHTOOL_A_STRING_VALUE, names[i])
							return nil
						})
					}
					return nil
				})
				return nil
			})
			return nil
		})
	})
	got, err := decodeStrset(strset)
	if err != nil || !reflect.DeepEqual(got, names) {
		t.Fatalf("decodeStrset = %q, %v; want %q", got, err, names)
	}
	reply := encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Nested(unix.ETHTOOL_A_FEATURES_HW, bitset(3, 0, 2))
		ae.Nested(unix.ETHTOOL_A_FEATURES_WANTED, bitset(3, 0, 2))
		ae.Nested(unix.ETHTOOL_A_FEATURES_ACTIVE, bitset(3, 0))
	})
	f, err := decodeFeatures(reply, got)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Feature{
		"tx-scatter-gather": {Name: "tx-scatter-gather", Changeable: true, Wanted: true, Active: true},
		"tx-checksum-ipv4":  {Name: "tx-checksum-ipv4"},
		"rx-gro":            {Name: "rx-gro", Changeable: true, Wanted: true},
	}
	for name, w := range want {
		if g, ok := f.Lookup(name); !ok || g != w {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", name, g, ok, w)
		}
	}
}

func TestDecodeBitsetBounds(t *testing.T) {
	short := encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(unix.ETHTOOL_A_BITSET_SIZE, 64)
		ae.Bytes(unix.ETHTOOL_A_BITSET_VALUE, make([]byte, 4))
	})
	if _, err := decodeCompactBitset(short); err == nil {
		t.Errorf("decodeCompactBitset(64 bits in 4 bytes) = nil error")
	}
	partWord := encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(unix.ETHTOOL_A_BITSET_SIZE, 40)
		ae.Bytes(unix.ETHTOOL_A_BITSET_VALUE, make([]byte, 5))
	})
	if _, err := decodeCompactBitset(partWord); err == nil {
		t.Errorf("decodeCompactBitset(40 bits in 5 bytes) = nil error, want one (the kernel sends whole words)")
	}
	wide := encode(t, func(ae *netlink.AttributeEncoder) { bitset(40, 33)(ae) })
	bits, err := decodeCompactBitset(wide)
	if err != nil || len(bits) != 40 || !bits[33] || bits[1] {
		t.Errorf("decodeCompactBitset(bit 33 of 40) = %v, %v", bits, err)
	}
}

func TestDecodeChannels(t *testing.T) {
	reply := encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(unix.ETHTOOL_A_CHANNELS_RX_MAX, 4)
		ae.Uint32(unix.ETHTOOL_A_CHANNELS_RX_COUNT, 2)
		ae.Uint32(unix.ETHTOOL_A_CHANNELS_COMBINED_MAX, 8)
		ae.Uint32(unix.ETHTOOL_A_CHANNELS_COMBINED_COUNT, 1)
	})
	got, err := decodeChannels(reply)
	if want := (Channels{RX: 2, MaxRX: 4, Combined: 1, MaxCombined: 8}); err != nil || got != want {
		t.Errorf("decodeChannels = %+v, %v; want %+v", got, err, want)
	}
}

// TestSetRequests decodes the SET requests back: the header names the
// interface and asks for no reply; only the given bits and counts appear.
func TestSetRequests(t *testing.T) {
	req, err := featuresSetRequest("eth0", []Feature{{Name: "rx-gro", Wanted: true}, {Name: "tx-checksum-sctp"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []Feature
	var dev string
	var flags uint32
	err = walk(req, func(typ uint16, ad *netlink.AttributeDecoder) error {
		switch typ {
		case unix.ETHTOOL_A_FEATURES_HEADER:
			dev, flags = decodeTestHeader(t, ad.Bytes())
		case unix.ETHTOOL_A_FEATURES_WANTED:
			got = decodeTestBits(t, ad.Bytes())
		}
		return nil
	})
	want := []Feature{{Name: "rx-gro", Wanted: true}, {Name: "tx-checksum-sctp"}}
	if err != nil || dev != "eth0" || flags != unix.ETHTOOL_FLAG_OMIT_REPLY || !reflect.DeepEqual(got, want) {
		t.Errorf("featuresSetRequest decodes to %q %#x %+v, %v; want eth0 %#x %+v", dev, flags, got, err, unix.ETHTOOL_FLAG_OMIT_REPLY, want)
	}
	two := uint32(2)
	req, err = channelsSetRequest("eth0", ChannelCounts{TX: &two})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[uint16]uint32{}
	_ = walk(req, func(typ uint16, ad *netlink.AttributeDecoder) error {
		if typ != unix.ETHTOOL_A_CHANNELS_HEADER {
			counts[typ] = ad.Uint32()
		}
		return nil
	})
	if want := map[uint16]uint32{unix.ETHTOOL_A_CHANNELS_TX_COUNT: 2}; !reflect.DeepEqual(counts, want) {
		t.Errorf("channelsSetRequest(tx 2) carries %v, want %v", counts, want)
	}
}

func decodeTestHeader(t *testing.T, data []byte) (dev string, flags uint32) {
	t.Helper()
	_ = walk(data, func(typ uint16, ad *netlink.AttributeDecoder) error {
		switch typ {
		case unix.ETHTOOL_A_HEADER_DEV_NAME:
			dev = ad.String()
		case unix.ETHTOOL_A_HEADER_FLAGS:
			flags = ad.Uint32()
		}
		return nil
	})
	return dev, flags
}

func decodeTestBits(t *testing.T, data []byte) []Feature {
	t.Helper()
	var out []Feature
	_ = walk(data, func(typ uint16, ad *netlink.AttributeDecoder) error {
		if typ == unix.ETHTOOL_A_BITSET_NOMASK {
			t.Errorf("a SET bitset with NOMASK would clear every bit not listed")
		}
		if typ != unix.ETHTOOL_A_BITSET_BITS {
			return nil
		}
		return walk(ad.Bytes(), func(_ uint16, bit *netlink.AttributeDecoder) error {
			var f Feature
			_ = walk(bit.Bytes(), func(typ uint16, ad *netlink.AttributeDecoder) error {
				switch typ {
				case unix.ETHTOOL_A_BITSET_BIT_NAME:
					f.Name = ad.String()
				case unix.ETHTOOL_A_BITSET_BIT_VALUE:
					f.Wanted = true
				}
				return nil
			})
			out = append(out, f)
			return nil
		})
	})
	return out
}

// FuzzDecodeReplies feeds arbitrary attributes to every reply decoder:
// none may panic, nor make more bits than the reply's bytes hold.
func FuzzDecodeReplies(f *testing.F) {
	f.Add(encodeSeed(func(ae *netlink.AttributeEncoder) {
		ae.Nested(unix.ETHTOOL_A_FEATURES_ACTIVE, bitset(40, 1, 33))
	}))
	f.Add(encodeSeed(func(ae *netlink.AttributeEncoder) {
		ae.Uint32(unix.ETHTOOL_A_CHANNELS_RX_MAX, 4)
	}))
	f.Fuzz(func(t *testing.T, data []byte) {
		names, _ := decodeStrset(data)
		if feats, err := decodeFeatures(data, names); err == nil && len(feats.Active) > 8*len(data) {
			t.Errorf("decodeFeatures made %d bits of %d bytes", len(feats.Active), len(data))
		}
		_, _ = decodeChannels(data)
		_, _ = decodeCompactBitset(data)
	})
}

func encodeSeed(fn func(ae *netlink.AttributeEncoder)) []byte {
	ae := netlink.NewAttributeEncoder()
	fn(ae)
	b, _ := ae.Encode()
	return b
}
