package ethtool

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ethSSFeatures is ETH_SS_FEATURES of enum ethtool_stringset: the names of
// the netdev features, by bit index.
const ethSSFeatures = 4

// Features is what `ethtool -k` shows of an interface: for each feature of
// the kernel, whether the driver lets it change, whether it was asked for,
// and whether it is on.
type Features struct {
	// Names are the kernel's feature names, by bit index.
	Names []string
	// Changeable holds the features the driver lets change (hw_features);
	// `ethtool -k` prints "[fixed]" after the others.
	Changeable []bool
	// Wanted holds the features asked for (wanted_features); the kernel
	// turns one on only when the driver and the other features allow it.
	Wanted []bool
	// Active holds the features that are on, as `ethtool -k` prints them.
	Active []bool
}

// Index returns the bit index of the feature called name.
func (f *Features) Index(name string) (int, bool) {
	for i, n := range f.Names {
		if n == name {
			return i, true
		}
	}
	return 0, false
}

// Feature is one feature's state, looked up by name.
type Feature struct {
	Name       string
	Changeable bool
	Wanted     bool
	Active     bool
}

// Lookup returns the state of the feature called name.
func (f *Features) Lookup(name string) (Feature, bool) {
	i, ok := f.Index(name)
	if !ok {
		return Feature{}, false
	}
	at := func(b []bool) bool { return i < len(b) && b[i] }
	return Feature{Name: name, Changeable: at(f.Changeable), Wanted: at(f.Wanted), Active: at(f.Active)}, true
}

// Channels are an interface's queue counts and the driver's maximum of
// each, as `ethtool -l` shows them. A maximum of 0 means the driver has no
// channels of that kind (ethtool prints "n/a").
type Channels struct {
	RX, TX, Other, Combined             uint32
	MaxRX, MaxTX, MaxOther, MaxCombined uint32
}

// ChannelCounts are the channel counts to set; nil leaves a count as it is.
type ChannelCounts struct {
	RX, TX, Other, Combined *uint32
}

// encodeHeader writes the request header naming the interface, with the
// given ETHTOOL_FLAG_* flags.
func encodeHeader(ae *netlink.AttributeEncoder, typ uint16, ifName string, flags uint32) {
	ae.Nested(typ, func(nae *netlink.AttributeEncoder) error {
		nae.String(unix.ETHTOOL_A_HEADER_DEV_NAME, ifName)
		if flags != 0 {
			nae.Uint32(unix.ETHTOOL_A_HEADER_FLAGS, flags)
		}
		return nil
	})
}

// strsetRequest asks for the names of the features.
// Equivalent to: ethtool --show-features $ifName (its first request)
func strsetRequest(ifName string) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_STRSET_HEADER, ifName, 0)
	ae.Nested(unix.ETHTOOL_A_STRSET_STRINGSETS, func(sets *netlink.AttributeEncoder) error {
		sets.Nested(unix.ETHTOOL_A_STRINGSETS_STRINGSET, func(set *netlink.AttributeEncoder) error {
			set.Uint32(unix.ETHTOOL_A_STRINGSET_ID, ethSSFeatures)
			return nil
		})
		return nil
	})
	return ae.Encode()
}

// decodeStrset returns the strings of the feature string set of a
// STRSET_GET reply, by index.
func decodeStrset(data []byte) ([]string, error) {
	var names []string
	err := walk(data, func(typ uint16, ad *netlink.AttributeDecoder) error {
		if typ != unix.ETHTOOL_A_STRSET_STRINGSETS {
			return nil
		}
		return walk(ad.Bytes(), func(typ uint16, ad *netlink.AttributeDecoder) error {
			if typ != unix.ETHTOOL_A_STRINGSETS_STRINGSET {
				return nil
			}
			var err error
			names, err = decodeStringSet(ad.Bytes())
			return err
		})
	})
	if err == nil && names == nil {
		err = errors.New("the kernel sent no feature names")
	}
	return names, err
}

// decodeStringSet reads one ETHTOOL_A_STRINGSETS_STRINGSET nest.
func decodeStringSet(data []byte) ([]string, error) {
	var id, count uint32
	var strings []byte
	err := walk(data, func(typ uint16, ad *netlink.AttributeDecoder) error {
		switch typ {
		case unix.ETHTOOL_A_STRINGSET_ID:
			id = ad.Uint32()
		case unix.ETHTOOL_A_STRINGSET_COUNT:
			count = ad.Uint32()
		case unix.ETHTOOL_A_STRINGSET_STRINGS:
			strings = ad.Bytes()
		}
		return nil
	})
	if err != nil || id != ethSSFeatures {
		return nil, err
	}
	if count > 1<<16 {
		return nil, fmt.Errorf("feature string set of %d names", count)
	}
	names := make([]string, count)
	err = walk(strings, func(typ uint16, ad *netlink.AttributeDecoder) error {
		if typ != unix.ETHTOOL_A_STRINGS_STRING {
			return nil
		}
		return decodeString(ad.Bytes(), names)
	})
	return names, err
}

// decodeString reads one ETHTOOL_A_STRINGS_STRING nest into names.
func decodeString(data []byte, names []string) error {
	index, value := -1, ""
	err := walk(data, func(typ uint16, ad *netlink.AttributeDecoder) error {
		switch typ {
		case unix.ETHTOOL_A_STRING_INDEX:
			index = int(ad.Uint32())
		case unix.ETHTOOL_A_STRING_VALUE:
			value = ad.String()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if index < 0 || index >= len(names) {
		return fmt.Errorf("feature name %q at index %d of %d", value, index, len(names))
	}
	names[index] = value
	return nil
}

// decodeFeatures reads the compact bitsets of a FEATURES_GET reply.
func decodeFeatures(data []byte, names []string) (*Features, error) {
	f := &Features{Names: names}
	err := walk(data, func(typ uint16, ad *netlink.AttributeDecoder) error {
		var dst *[]bool
		switch typ {
		case unix.ETHTOOL_A_FEATURES_HW:
			dst = &f.Changeable
		case unix.ETHTOOL_A_FEATURES_WANTED:
			dst = &f.Wanted
		case unix.ETHTOOL_A_FEATURES_ACTIVE:
			dst = &f.Active
		default:
			return nil
		}
		var err error
		*dst, err = decodeCompactBitset(ad.Bytes())
		return err
	})
	if err != nil {
		return nil, err
	}
	if f.Active == nil {
		return nil, errors.New("the kernel sent no active features")
	}
	return f, nil
}

// decodeCompactBitset reads a bitset sent with ETHTOOL_FLAG_COMPACT_BITSETS:
// its size in bits and its value as 32-bit words in host order.
func decodeCompactBitset(data []byte) ([]bool, error) {
	var size uint32
	var words []byte
	err := walk(data, func(typ uint16, ad *netlink.AttributeDecoder) error {
		switch typ {
		case unix.ETHTOOL_A_BITSET_SIZE:
			size = ad.Uint32()
		case unix.ETHTOOL_A_BITSET_VALUE:
			words = ad.Bytes()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if uint64(len(words)) < (uint64(size)+31)/32*4 {
		return nil, fmt.Errorf("bitset of %d bits in %d bytes, not whole 32-bit words", size, len(words))
	}
	bits := make([]bool, size)
	for i := range bits {
		w := binary.NativeEndian.Uint32(words[i/32*4:])
		bits[i] = w&(1<<(i%32)) != 0
	}
	return bits, nil
}

// featuresSetRequest asks for the wanted value of each named feature, and
// leaves every other feature as it is: a bitset without NOMASK lists the
// bits to change, each on when it carries the VALUE flag.
// Equivalent to: ethtool -K $ifName name on|off ...
func featuresSetRequest(ifName string, wanted []Feature) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_FEATURES_HEADER, ifName, unix.ETHTOOL_FLAG_OMIT_REPLY)
	ae.Nested(unix.ETHTOOL_A_FEATURES_WANTED, func(set *netlink.AttributeEncoder) error {
		set.Nested(unix.ETHTOOL_A_BITSET_BITS, func(bits *netlink.AttributeEncoder) error {
			for _, f := range wanted {
				bits.Nested(unix.ETHTOOL_A_BITSET_BITS_BIT, func(bit *netlink.AttributeEncoder) error {
					bit.String(unix.ETHTOOL_A_BITSET_BIT_NAME, f.Name)
					if f.Wanted {
						bit.Flag(unix.ETHTOOL_A_BITSET_BIT_VALUE, true)
					}
					return nil
				})
			}
			return nil
		})
		return nil
	})
	return ae.Encode()
}

// decodeChannels reads a CHANNELS_GET reply. The kernel sends a count only
// with a maximum that is not zero.
func decodeChannels(data []byte) (Channels, error) {
	var ch Channels
	fields := map[uint16]*uint32{
		unix.ETHTOOL_A_CHANNELS_RX_MAX: &ch.MaxRX, unix.ETHTOOL_A_CHANNELS_TX_MAX: &ch.MaxTX,
		unix.ETHTOOL_A_CHANNELS_OTHER_MAX: &ch.MaxOther, unix.ETHTOOL_A_CHANNELS_COMBINED_MAX: &ch.MaxCombined,
		unix.ETHTOOL_A_CHANNELS_RX_COUNT: &ch.RX, unix.ETHTOOL_A_CHANNELS_TX_COUNT: &ch.TX,
		unix.ETHTOOL_A_CHANNELS_OTHER_COUNT: &ch.Other, unix.ETHTOOL_A_CHANNELS_COMBINED_COUNT: &ch.Combined,
	}
	err := walk(data, func(typ uint16, ad *netlink.AttributeDecoder) error {
		if p, ok := fields[typ]; ok {
			*p = ad.Uint32()
		}
		return nil
	})
	return ch, err
}

// channelsSetRequest sets the given counts and leaves the others.
// Equivalent to: ethtool -L $ifName rx N tx N other N combined N
func channelsSetRequest(ifName string, set ChannelCounts) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_CHANNELS_HEADER, ifName, unix.ETHTOOL_FLAG_OMIT_REPLY)
	for _, c := range []struct {
		typ uint16
		n   *uint32
	}{
		{unix.ETHTOOL_A_CHANNELS_RX_COUNT, set.RX}, {unix.ETHTOOL_A_CHANNELS_TX_COUNT, set.TX},
		{unix.ETHTOOL_A_CHANNELS_OTHER_COUNT, set.Other}, {unix.ETHTOOL_A_CHANNELS_COMBINED_COUNT, set.Combined},
	} {
		if c.n != nil {
			ae.Uint32(c.typ, *c.n)
		}
	}
	return ae.Encode()
}

// walk calls fn for every attribute of data, nested ones without their
// NLA_F_NESTED bit (Type masks it), and returns the first error of fn or of decoding.
func walk(data []byte, fn func(typ uint16, ad *netlink.AttributeDecoder) error) error {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return err
	}
	for ad.Next() {
		if err := fn(ad.Type(), ad); err != nil {
			return err
		}
	}
	return ad.Err()
}
