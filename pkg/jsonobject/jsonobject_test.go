package jsonobject

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestDecodeKeepsOrderRefusesRepeats(t *testing.T) {
	var keys []string
	member := func(key string, raw json.RawMessage) error { keys = append(keys, key+"="+string(raw)); return nil }
	ok, err := Decode([]byte(`{"b":1,"a":"x"}`), "sysctl", "an object", member)
	if !ok || err != nil || !slices.Equal(keys, []string{"b=1", `a="x"`}) {
		t.Errorf("Decode = %v, %v, members %q; want true, nil, [b=1 a=\"x\"]", ok, err, keys)
	}
	if ok, err := Decode([]byte(`null`), "sysctl", "an object", member); ok || err != nil {
		t.Errorf("Decode(null) = %v, %v, want false, nil", ok, err)
	}
	_, err = Decode([]byte(`{"a":1,"a":2}`), "sysctl", "an object", member)
	if err == nil || !strings.Contains(err.Error(), `sysctl: key "a" given twice`) {
		t.Errorf("Decode(repeated key) = %v, want it refused by name", err)
	}
	_, err = Decode([]byte(`[1]`), "features", "a JSON object of booleans", member)
	if err == nil || !strings.Contains(err.Error(), "features: want a JSON object of booleans, got an array") {
		t.Errorf("Decode(array) = %v, want 'got an array'", err)
	}
}

func TestEncodeAndMerge(t *testing.T) {
	type kv struct{ k, v string }
	merged := MergeByKey([]kv{{"a", "1"}, {"b", "2"}}, []kv{{"b", "3"}, {"c", "4"}}, func(x kv) string { return x.k })
	data, err := Encode(len(merged), func(i int) (string, any) { return merged[i].k, merged[i].v })
	if err != nil || string(data) != `{"a":"1","b":"3","c":"4"}` {
		t.Errorf("Encode(MergeByKey) = %s, %v, want {\"a\":\"1\",\"b\":\"3\",\"c\":\"4\"}", data, err)
	}
}
