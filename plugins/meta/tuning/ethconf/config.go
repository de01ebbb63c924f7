package ethconf

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"strings"

	"cnisuite/pkg/jsonobject"
	"cnisuite/pkg/types"
)

// Features is the ordered content of a "features" JSON object: kernel
// feature names (or ethtool's group names, see Groups), each on
// or off. Decoding refuses duplicate names and values that are not JSON
// booleans.
type Features []Request

// featureNameMax is the longest feature name: the kernel's strings are at
// most ETH_GSTRING_LEN (32) bytes with their NUL.
const featureNameMax = 31

// UnmarshalJSON reads a JSON object of booleans, keeping the order of its
// keys.
func (f *Features) UnmarshalJSON(data []byte) error {
	out := Features{}
	isObject, err := jsonobject.Decode(data, "features", "a JSON object of booleans", func(name string, raw json.RawMessage) error {
		var on bool
		if err := json.Unmarshal(raw, &on); err != nil || raw[0] == 'n' {
			return types.Errorf(types.ErrInvalidConfig, "features %q: value %s is not a JSON boolean (true or false)", name, raw)
		}
		out = append(out, Request{Name: name, On: on})
		return nil
	})
	if err != nil {
		return err
	}
	*f = nil
	if isObject {
		*f = out
	}
	return nil
}

// MarshalJSON writes the features back as a JSON object, in order.
func (f Features) MarshalJSON() ([]byte, error) {
	return jsonobject.Encode(len(f), func(i int) (string, any) { return f[i].Name, f[i].On })
}

// Merge returns f with the entries of over added, a name of over replacing
// the same name of f in place.
func (f Features) Merge(over Features) Features {
	return jsonobject.MergeByKey(f, over, func(x Request) string { return x.Name })
}

// Validate checks every name's spelling and that no group contradicts one
// of its members or another entry. Whether the kernel knows a name is
// checked on ADD, where the kernel is.
func (f Features) Validate() error {
	var errs []error
	for _, e := range f {
		if err := validFeatureName(e.Name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, g := range f {
		if _, ok := Groups[g.Name]; !ok {
			continue
		}
		for _, m := range f {
			if m.Name != g.Name && InGroup(g.Name, m.Name) && m.On != g.On {
				errs = append(errs, types.Errorf(types.ErrInvalidConfig,
					"features: %q is %t but its member %q is %t; give one value for both", g.Name, g.On, m.Name, m.On))
			}
		}
	}
	return errors.Join(errs...)
}

// validFeatureName refuses a name that no kernel feature can have: empty,
// longer than the kernel's strings, or with a character outside the
// letters, digits, '-' and '_' that the kernel's names use.
func validFeatureName(name string) error {
	if name == "" || len(name) > featureNameMax {
		return types.Errorf(types.ErrInvalidConfig, "features %q: a feature name has 1 to %d characters", name, featureNameMax)
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}); i >= 0 {
		return types.Errorf(types.ErrInvalidConfig, "features %q: %q is not a letter, digit, '-' or '_'; see `ethtool -k` for the names", name, name[i:i+1])
	}
	return nil
}

// Channels are the channel (queue) counts to set, as `ethtool -L` takes
// them; a nil count is left as it is.
type Channels struct {
	RX       *int64 `json:"rx,omitempty"`
	TX       *int64 `json:"tx,omitempty"`
	Other    *int64 `json:"other,omitempty"`
	Combined *int64 `json:"combined,omitempty"`
}

// channelsFields lets the decoder refuse unknown keys without recursing.
type channelsFields Channels

// UnmarshalJSON refuses a key other than rx, tx, other and combined: a
// misspelt count would otherwise be dropped without a word.
func (ch *Channels) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f channelsFields
	err := dec.Decode(&f)
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return types.Errorf(types.ErrInvalidConfig, "channels: got a JSON %s, want an object of integers", te.Value)
	case errors.As(err, &te):
		return types.Errorf(types.ErrInvalidConfig, "channels.%s: got a JSON %s, want an integer", te.Field, te.Value)
	case err != nil && strings.HasPrefix(err.Error(), "json: unknown field "):
		return types.Errorf(types.ErrInvalidConfig, "channels: %s; the keys are rx, tx, other and combined",
			strings.TrimPrefix(err.Error(), "json: "))
	case err != nil:
		return types.Errorf(types.ErrInvalidConfig, "channels: want a JSON object of integers: %w", err)
	}
	*ch = Channels(f)
	return nil
}

// each calls fn with the name and value of every count.
func (ch *Channels) each(fn func(name string, n *int64)) {
	fn("rx", ch.RX)
	fn("tx", ch.TX)
	fn("other", ch.Other)
	fn("combined", ch.Combined)
}

// Empty reports whether no count is given.
func (ch *Channels) Empty() bool {
	return ch == nil || *ch == Channels{}
}

// Merge returns ch with the counts given in over replacing its own.
func (ch *Channels) Merge(over *Channels) *Channels {
	if over == nil {
		return ch
	}
	out := Channels{}
	if ch != nil {
		out = *ch
	}
	out.RX = cmp.Or(over.RX, out.RX)
	out.TX = cmp.Or(over.TX, out.TX)
	out.Other = cmp.Or(over.Other, out.Other)
	out.Combined = cmp.Or(over.Combined, out.Combined)
	return &out
}

// Validate refuses a count below 0 or beyond 32 bits.
func (ch *Channels) Validate() error {
	if ch == nil {
		return nil
	}
	var errs []error
	ch.each(func(name string, n *int64) {
		if n != nil && (*n < 0 || *n > math.MaxUint32) {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig, "channels.%s %d: must be 0 to %d", name, *n, uint32(math.MaxUint32)))
		}
	})
	return errors.Join(errs...)
}

// ChannelState is the channel counts DEL puts back; nil ones were not
// changed.
type ChannelState struct {
	RX       *uint32 `json:"rx,omitempty"`
	TX       *uint32 `json:"tx,omitempty"`
	Other    *uint32 `json:"other,omitempty"`
	Combined *uint32 `json:"combined,omitempty"`
}

// MergeOlder keeps every count of s, the older state, and adds those of
// newer that s lacks.
func (s *ChannelState) MergeOlder(newer *ChannelState) *ChannelState {
	if s == nil || newer == nil {
		return cmp.Or(s, newer)
	}
	out := *s
	out.RX = cmp.Or(out.RX, newer.RX)
	out.TX = cmp.Or(out.TX, newer.TX)
	out.Other = cmp.Or(out.Other, newer.Other)
	out.Combined = cmp.Or(out.Combined, newer.Combined)
	return &out
}
