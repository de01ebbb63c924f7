package fuzz

import (
	"fmt"
	"strings"

	"github.com/vishvananda/netlink"

	"cnisuite/test/fuzz/jsontree"
	"cnisuite/test/fuzz/protocol"
)

// verbs run on every input, in a runtime's order: GC keeps the input's own
// attachment, so DEL still has everything to remove.
var verbs = []string{"ADD", "CHECK", "STATUS", "GC", "DEL"}

// result is what one input did.
type result struct {
	in       Input
	dir      string
	outcomes []protocol.Outcome
	stdins   map[string][]byte
	problems []string // "VERB: problem" or "leftover: …"
	// minimized is the smallest configuration that fails alike, when
	// minimizing was asked for.
	minimized []byte
}

// runInput runs every verb of in and checks the protocol and what DEL left.
func (w *world) runInput(in Input, dir string) *result {
	res := &result{in: in, dir: dir, stdins: map[string][]byte{}}
	before, err := w.snapshot()
	if err != nil {
		res.problems = append(res.problems, "test: snapshot before ADD: "+err.Error())
		return res
	}
	want := protocol.ConfigVersion(in.Config)
	tree, err := jsontree.Parse(in.Config)
	if err != nil {
		tree = nil
	}
	var added []byte
	for _, verb := range verbs {
		stdin := w.stdin(in, tree, verb, added)
		o := w.exec(in, dir, verb, stdin)
		res.outcomes, res.stdins[verb] = append(res.outcomes, o), stdin
		for _, p := range protocol.CheckProtocol(o, want) {
			res.problems = append(res.problems, verb+": "+p)
		}
		if verb == "ADD" && o.Exit == 0 && o.StartErr == nil {
			added = o.Stdout
		}
		if verb == "DEL" && added != nil && o.Exit != 0 {
			res.problems = append(res.problems, "DEL: failed after ADD of the same configuration succeeded")
		}
	}
	after, err := w.snapshot()
	if err != nil {
		res.problems = append(res.problems, "test: snapshot after DEL: "+err.Error())
		return res
	}
	for _, l := range append(leftovers(before, after), fileLeftovers(dir, in.Env.ContainerID)...) {
		res.problems = append(res.problems, "leftover after DEL: "+l)
	}
	w.removeNewBridges(before, after)
	return res
}

// stdin is the configuration verb gets: CHECK and DEL get ADD's result as
// prevResult when ADD succeeded, GC gets the input's attachment as the one
// valid attachment, as libcni sends them. tree is the parsed configuration,
// nil when it is not JSON.
func (w *world) stdin(in Input, tree any, verb string, added []byte) []byte {
	var key string
	var value any
	switch {
	case (verb == "CHECK" || verb == "DEL") && added != nil:
		prev, err := jsontree.Parse(added)
		if err != nil {
			return in.Config
		}
		key, value = "prevResult", prev
	case verb == "GC":
		key, value = "cni.dev/valid-attachments", jsontree.Arr(jsontree.Obj("containerID", in.Env.ContainerID, "ifname", in.Env.IfName))
	default:
		return in.Config
	}
	o, ok := tree.(*jsontree.Object)
	if !ok {
		return in.Config
	}
	o = &jsontree.Object{Fields: append([]jsontree.Field(nil), o.Fields...)} // a shallow copy: Set replaces top-level values only
	o.Set(key, value)
	return jsontree.Marshal(o)
}

// removeNewBridges deletes the bridges a mutated bridge name made, so that
// the batch's next input meets the node as the previous one did.
func (w *world) removeNewBridges(before, after *state) {
	err := w.node.Do(func() error {
		for name := range after.bridges {
			if before.bridges[name] {
				continue
			}
			if l, err := netlink.LinkByName(name); err == nil {
				if err := netlink.LinkDel(l); err != nil {
					return fmt.Errorf("removing bridge %s: %w", name, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		w.t.Errorf("%v", err)
	}
}

// report spells out a failing input whole: how to rebuild it, the
// configuration, the environment, and every verb's stdin, exit status,
// stdout and stderr.
func (r *result) report(seed uint64) string {
	var b strings.Builder
	in := r.in
	fmt.Fprintf(&b, "FUZZ FAILURE plugin=%s base=%s input=%d seed=%d\n", in.Plugin, in.Base, in.Index, seed)
	fmt.Fprintf(&b, "reproduce: make build && CNISUITE_BIN=$PWD/bin CNISUITE_REQUIRE_PRIVILEGED=1 CNISUITE_FUZZ_SEED=%d CNISUITE_FUZZ_ONLY=%s:%d scripts/sandbox.sh go test -count=1 -v -run TestFuzzBinaries ./test/fuzz\n",
		seed, in.Plugin, in.Index)
	fmt.Fprintf(&b, "problems:\n")
	for _, p := range r.problems {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	fmt.Fprintf(&b, "mutations:\n")
	for _, m := range in.Mutations {
		fmt.Fprintf(&b, "  - %s\n", m)
	}
	fmt.Fprintf(&b, "env: %q CNI_PATH=<bin>\n", cleanEnv(in.Env.Vars("ADD")))
	fmt.Fprintf(&b, "config (%d bytes):\n%s\n", len(in.Config), in.Config)
	if r.minimized != nil {
		fmt.Fprintf(&b, "minimized config, same failure (%d bytes):\n%s\n", len(r.minimized), r.minimized)
	}
	for _, o := range r.outcomes {
		fmt.Fprintf(&b, "--- %s: exit %d timedOut %v startErr %v\n", o.Verb, o.Exit, o.TimedOut, o.StartErr)
		if s := r.stdins[o.Verb]; string(s) != string(in.Config) {
			fmt.Fprintf(&b, "stdin:\n%s\n", s)
		}
		fmt.Fprintf(&b, "stdout:\n%s\nstderr:\n%s\n", o.Stdout, o.Stderr)
	}
	return b.String()
}

// signature groups failures that are likely one bug: the problems with
// digits and quoted values blurred.
func (r *result) signature() string {
	var parts []string
	for _, p := range r.problems {
		parts = append(parts, blur(p))
	}
	return r.in.Plugin + ": " + strings.Join(parts, " | ")
}

// blur drops quoted values and turns each run of digits into #.
func blur(s string) string {
	var b strings.Builder
	quoted := false
	for _, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
			if quoted {
				b.WriteString(`"…"`)
			}
		case quoted:
		case c >= '0' && c <= '9':
			if !strings.HasSuffix(b.String(), "#") {
				b.WriteByte('#')
			}
		default:
			b.WriteRune(c)
		}
	}
	if len(b.String()) > 300 {
		return b.String()[:300]
	}
	return b.String()
}
