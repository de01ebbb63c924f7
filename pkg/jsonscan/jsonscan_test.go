package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

type pair struct {
	A string
	N int
}

// read reads {"a": string, "n": int} with a Reader.
func read(data string) (pair, bool) {
	var p pair
	r := NewReader([]byte(data))
	r.Object([]string{"a", "n"}, func(i int) {
		if i == 0 {
			p.A = r.String()
		} else {
			p.N = r.Int()
		}
	})
	return p, r.OK()
}

// TestReadsPlainShapes: what the Reader takes, it reads as encoding/json
// does, other keys skipped whatever they hold.
func TestReadsPlainShapes(t *testing.T) {
	for _, s := range []string{
		`{"a":"x","n":-12}`,
		` { "n" : 7 , "a" : "é ü" } `,
		`{"skip":  [ 1, {"a":"\"}"}, [], "\\" ],"a":"y","t":  true,"f":false,"z":null,"e":1.5e3,"o":{}}`,
		`{}`,
	} {
		got, ok := read(s)
		if !ok {
			t.Errorf("refused %s", s)
			continue
		}
		var want struct {
			A string `json:"a"`
			N int    `json:"n"`
		}
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if got != pair(want) {
			t.Errorf("%s: read %+v, encoding/json %+v", s, got, want)
		}
	}
}

// TestRefusesWhatEncodingJSONDecides: escapes, bad UTF-8, fractions,
// nulls, repeated keys, keys in another case and invalid documents are
// refused, for encoding/json to decide.
func TestRefusesWhatEncodingJSONDecides(t *testing.T) {
	for _, s := range []string{
		`{"a":"\u0041"}`, `{"a":"` + "\xff" + `"}`, `{"n":1.0}`, `{"n":1e2}`, `{"n":99999999999999999999}`,
		`{"a":null}`, `{"n":"1"}`, `{"a":"x","a":"y"}`, `{"A":"x"}`, `{"ñ":1}`, `{"a":"x"`, `[1]`, `null`,
	} {
		if p, ok := read(s); ok {
			t.Errorf("took %s as %+v", s, p)
		}
	}
}

func TestStrings(t *testing.T) {
	r := NewReader([]byte(` [ "a" , "b" ] `))
	if got := r.Strings(); !r.OK() || !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("Strings = %q, %v", got, r.OK())
	}
	r = NewReader([]byte(`[]`))
	if got := r.Strings(); !r.OK() || got == nil || len(got) != 0 {
		t.Fatalf("Strings of [] = %#v, want an empty list", got)
	}
}

// TestAppendStringAsEncodingJSON: the bytes encoding/json writes, escapes
// included.
func TestAppendStringAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "eth0", "a\"b\\c", "<&>", "tab\there", "\u2028", "é", "\xff", "\x00"} {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	}
}

func TestMembersBoolRaw(t *testing.T) {
	r := NewReader([]byte(`{"x": true, "y" :false, "raw": {"a": [1, "\"]"]} , "n": 12}`))
	got := map[string]string{}
	r.Members(func(key string) {
		switch key {
		case "x", "y":
			if r.Bool() {
				got[key] = "true"
			} else {
				got[key] = "false"
			}
		default:
			got[key] = string(r.Raw())
		}
	})
	want := map[string]string{"x": "true", "y": "false", "raw": `{"a": [1, "\"]"]}`, "n": "12"}
	if !r.OK() || !reflect.DeepEqual(got, want) {
		t.Fatalf("read %q (%v), want %q", got, r.OK(), want)
	}
	for _, s := range []string{`{"x":true,"x":false}`, `{"x":1}`, `{"raw":null}`} {
		r := NewReader([]byte(s))
		r.Members(func(key string) {
			if key == "x" {
				r.Bool()
			} else {
				r.Raw()
			}
		})
		if r.OK() {
			t.Errorf("took %s", s)
		}
	}
}

// every holds one field of each kind a Field takes.
type every struct {
	S   string          `json:"s"`
	PS  *string         `json:"ps"`
	I   int             `json:"i"`
	PI  *int            `json:"pi"`
	B   bool            `json:"b"`
	PB  *bool           `json:"pb"`
	L   []string        `json:"l"`
	PL  *[]string       `json:"pl"`
	Raw json.RawMessage `json:"raw"`
	Own string          `json:"own"`
}

func (e *every) fields() []Field {
	return []Field{{"s", &e.S}, {"ps", &e.PS}, {"i", &e.I}, {"pi", &e.PI}, {"b", &e.B}, {"pb", &e.PB},
		{"l", &e.L}, {"pl", &e.PL}, {"raw", &e.Raw}, {"own", func(r *Reader) { e.Own = r.String() + "!" }},
		{"left", nil}}
}

// TestFields: each kind of Field reads its value as encoding/json does (a
// reader of its own as it is written); a key left to encoding/json stops
// the Reader; Keys lists the keys in order.
func TestFields(t *testing.T) {
	doc := `{"s":"x","ps":"y","i":-3,"pi":4,"b":true,"pb":false,"l":["a"],"pl":[],"raw":{"k":[1]},"own":"o","other":[null]}`
	var got every
	r := NewReader([]byte(doc))
	r.Fields(got.fields())
	var want every
	if err := json.Unmarshal([]byte(doc), &want); err != nil {
		t.Fatal(err)
	}
	want.Own += "!"
	if !r.OK() || !reflect.DeepEqual(got, want) {
		t.Errorf("Fields read %+v (ok %v), encoding/json %+v", got, r.OK(), want)
	}
	r = NewReader([]byte(`{"s":"x","left":1}`))
	r.Fields(got.fields())
	if r.OK() {
		t.Errorf("a key left to encoding/json (Into nil) was taken")
	}
	for _, f := range got.fields() {
		if !Takes(f.Into) {
			t.Errorf("Takes(%T) = false for a kind Fields reads", f.Into)
		}
	}
	if Takes(new(float64)) || Takes(new(map[string]bool)) {
		t.Errorf("Takes says yes to a kind Fields does not read")
	}
	if keys := Keys(got.fields()); len(keys) != 11 || keys[0] != "s" || keys[10] != "left" {
		t.Errorf("Keys = %q", keys)
	}
}
