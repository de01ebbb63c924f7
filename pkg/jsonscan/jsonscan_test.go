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
