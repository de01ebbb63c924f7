package mutate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"cnisuite/test/fuzz/jsontree"
)

// PlaceholderRoot holds the fixed paths inputs are mutated with (see
// placeholders); placePaths moves whatever is under it into the input's own
// temporary directory before the input runs, so nothing is ever written
// there. Fixed, so that an input is the same text in every run.
const PlaceholderRoot = "/tmp/cnisuite-fuzz/"

// SafeRoots are the only directory trees an input may name by absolute
// path: tmpfs mounts of the sandbox (TMPDIR is its private temporary
// directory; /tmp itself is the machine's) and PlaceholderRoot, so
// whatever a plugin writes under a mutated dataDir stays in the sandbox.
var SafeRoots = []string{strings.TrimSuffix(os.TempDir(), "/") + "/", PlaceholderRoot, "/run/", "/var/lib/cni/", "/etc/cni/", "/opt/cni/"}

// UnderSafeRoot reports whether the absolute path p lies in a SafeRoot.
func UnderSafeRoot(p string) bool {
	if strings.Contains(p, "..") {
		return false
	}
	for _, r := range SafeRoots {
		if strings.HasPrefix(p, r) {
			return true
		}
	}
	return false
}

// Unsafe tells why text must not be handed to a plugin, or returns "":
//   - a string (key or value) that is an absolute path outside SafeRoots,
//     or that climbs out of them, since a flipped byte in "/tmp/…" or a
//     transplanted value could make a plugin write outside the sandbox's
//     tmpfs mounts;
//   - a delegated plugin type naming a plugin that delegates itself
//     ("bridge" as ipam.type): each level would start the next one, without
//     end (reported as a finding, see README.md).
//
// Text that is not JSON is read up to its first error, the way a streaming
// decoder would use a valid prefix.
func Unsafe(text []byte) string {
	dec := json.NewDecoder(bytes.NewReader(text))
	var st scanState
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if why := st.next(tok); why != "" {
			return why
		}
	}
}

// unsafeTree is Unsafe for a tree, which is much faster than scanning its
// text: key is the key v is the value of, depth the nesting of v.
func unsafeTree(v any, depth int, key string) string {
	switch x := v.(type) {
	case string:
		if why := unsafePath(x); why != "" {
			return why
		}
		if depth >= 2 && strings.EqualFold(key, "type") && x == "bridge" {
			return "a nested type names the bridge plugin, which would delegate to itself without end"
		}
	case *jsontree.Array:
		for _, it := range x.Items {
			if why := unsafeTree(it, depth+1, ""); why != "" {
				return why
			}
		}
	case *jsontree.Object:
		for _, f := range x.Fields {
			if why := unsafePath(f.Key); why != "" {
				return why
			}
			if why := unsafeTree(f.Value, depth+1, f.Key); why != "" {
				return why
			}
		}
	}
	return ""
}

// scanState follows keys and nesting through a token stream.
type scanState struct {
	stack   []byte // '{' or '[' per open container
	wantKey []bool // per open object: the next string is a key
	lastKey string
}

// next takes one token and returns why the text is unsafe, or "".
func (st *scanState) next(tok json.Token) string {
	inObject := len(st.stack) > 0 && st.stack[len(st.stack)-1] == '{'
	isKey := inObject && st.wantKey[len(st.wantKey)-1]
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{', '[':
			st.valueDone(inObject)
			st.stack = append(st.stack, byte(t))
			st.wantKey = append(st.wantKey, t == '{')
		default:
			st.stack = st.stack[:len(st.stack)-1]
			st.wantKey = st.wantKey[:len(st.wantKey)-1]
		}
		return ""
	case string:
		if why := unsafePath(t); why != "" {
			return why
		}
		if isKey {
			st.lastKey = t
			st.wantKey[len(st.wantKey)-1] = false
			return ""
		}
		if inObject && len(st.stack) >= 2 && strings.EqualFold(st.lastKey, "type") && t == "bridge" {
			return "a nested type names the bridge plugin, which would delegate to itself without end"
		}
	}
	st.valueDone(inObject)
	return ""
}

// valueDone records that a value of the current object was read.
func (st *scanState) valueDone(inObject bool) {
	if inObject {
		st.wantKey[len(st.wantKey)-1] = true
	}
}

// unsafePath returns why s could name a place outside the sandbox's tmpfs.
func unsafePath(s string) string {
	if strings.HasPrefix(s, "/") && !UnderSafeRoot(s) {
		return fmt.Sprintf("absolute path %q outside the sandbox's tmpfs mounts", s)
	}
	if strings.Count(s, "..") >= 2 {
		return fmt.Sprintf("%q may climb out of the working directory", s)
	}
	return ""
}
