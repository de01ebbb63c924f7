package ethconf

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFeaturesDecode: "features" keeps its keys' order, turns a JSON null
// into no features, and refuses what is not an object of booleans, a
// repeated name, a misspelt one, and a group contradicting its member;
// a merge replaces a name in place and adds new ones; the object is
// written back as read.
func TestFeaturesDecode(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: `{"rx-gro":true,"tx-checksumming":false}`, want: `{"rx-gro":true,"tx-checksumming":false}`},
		{in: `null`, want: ``},
		{in: `{"rx-gro":1}`, wantErr: `features "rx-gro": value 1 is not a JSON boolean`},
		{in: `{"rx-gro":null}`, wantErr: `features "rx-gro": value null is not a JSON boolean`},
		{in: `{"rx-gro":true,"rx-gro":false}`, wantErr: `rx-gro`},
		{in: `[true]`, wantErr: `features`},
		{in: `{"rx gro":true}`, wantErr: `features "rx gro": " " is not a letter, digit, '-' or '_'`},
		{in: `{"":true}`, wantErr: `features "": a feature name has 1 to 31 characters`},
		{in: `{"tx-checksumming":false,"tx-checksum-ipv4":true}`,
			wantErr: `features: "tx-checksumming" is false but its member "tx-checksum-ipv4" is true; give one value for both`},
	}
	for _, tt := range tests {
		var f Features
		err := json.Unmarshal([]byte(tt.in), &f)
		if err == nil {
			err = f.Validate()
		}
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("features %s: error %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("features %s: %v", tt.in, err)
			continue
		}
		if tt.want == "" {
			if f != nil {
				t.Errorf("features %s = %v, want none", tt.in, f)
			}
			continue
		}
		if out, err := json.Marshal(f); err != nil || string(out) != tt.want {
			t.Errorf("features %s written back = %s, %v; want %s", tt.in, out, err, tt.want)
		}
	}
	base := Features{{"rx-gro", true}, {"tx-checksumming", false}}
	got, _ := json.Marshal(base.Merge(Features{{"tx-checksumming", true}, {"rx-checksum", false}}))
	if want := `{"rx-gro":true,"tx-checksumming":true,"rx-checksum":false}`; string(got) != want {
		t.Errorf("Merge = %s, want %s", got, want)
	}
}

// TestChannelsDecode: "channels" takes rx, tx, other and combined as
// integers from 0 to 2^32-1 and refuses anything else by name; a merge
// takes the counts given over the older ones.
func TestChannelsDecode(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{in: `{"rx":2,"tx":3,"other":0,"combined":4294967295}`},
		{in: `{"rx":2,"queues":3}`, wantErr: `channels: unknown field "queues"; the keys are rx, tx, other and combined`},
		{in: `{"rx":"2"}`, wantErr: `channels.rx: got a JSON string, want an integer`},
		{in: `[2]`, wantErr: `channels: got a JSON array, want an object of integers`},
		{in: `{"rx":2`, wantErr: `channels: want a JSON object of integers`},
		{in: `{"rx":-1,"tx":4294967296}`, wantErr: "channels.rx -1: must be 0 to 4294967295\nchannels.tx 4294967296: must be 0 to 4294967295"},
	}
	for _, tt := range tests {
		var ch Channels
		err := ch.UnmarshalJSON([]byte(tt.in)) // as encoding/json calls it, and on a truncated object
		if err == nil {
			err = ch.Validate()
		}
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("channels %s: error %v, want %q", tt.in, err, tt.wantErr)
		}
	}
	var none *Channels
	if !none.Empty() || !(&Channels{}).Empty() || none.Validate() != nil {
		t.Error("no channels: want Empty and valid")
	}
	two, three := int64(2), int64(3)
	m := (&Channels{RX: &two, TX: &two}).Merge(&Channels{TX: &three})
	if m.Empty() || *m.RX != 2 || *m.TX != 3 || m.Other != nil {
		t.Errorf("Merge = %+v, want rx 2 tx 3", m)
	}
	if m := none.Merge(&Channels{RX: &two}); *m.RX != 2 {
		t.Errorf("nil.Merge = %+v, want rx 2", m)
	}
	if m := (&Channels{RX: &two}).Merge(nil); *m.RX != 2 {
		t.Errorf("Merge(nil) = %+v, want rx 2", m)
	}
}

// TestChannelStateMergeOlder: the counts DEL puts back are the oldest
// recorded for each channel.
func TestChannelStateMergeOlder(t *testing.T) {
	one, two, four := uint32(1), uint32(2), uint32(4)
	older := &ChannelState{RX: &four}
	got := older.MergeOlder(&ChannelState{RX: &one, TX: &two})
	if *got.RX != 4 || *got.TX != 2 || got.Combined != nil {
		t.Errorf("MergeOlder = %+v, want rx 4 (older) tx 2", got)
	}
	if got := (*ChannelState)(nil).MergeOlder(older); got != older {
		t.Errorf("nil.MergeOlder(s) = %+v, want s", got)
	}
}
