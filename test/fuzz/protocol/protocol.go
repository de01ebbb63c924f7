// Package protocol judges what a plugin printed for one verb as a runtime
// would: no Go stack, one well-formed error object on failure, and a
// result valid against the result schema of the configuration's version.
package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"cnisuite/test/fuzz/jsontree"
)

// Outcome is what one plugin process did.
type Outcome struct {
	Verb     string
	Exit     int
	Stdout   []byte
	Stderr   []byte
	TimedOut bool
	// Took is the process's run time, for the budget's statistics.
	Took time.Duration
	// StartErr is set when the process could not be run at all.
	StartErr error
}

// stackMarkers betray a Go panic or fatal error, whoever printed it.
var stackMarkers = []string{"goroutine ", "panic:", "fatal error:"}

// recoveredMarker is what pkg/skel's last-resort recover writes into the
// error object: a panic that was caught is still a bug.
const recoveredMarker = "internal error in plugin"

// CheckProtocol returns every way the outcome breaks the protocol: a Go
// stack or panic, a hang, exit status 2, a failure that is not exactly
// one error object with code, msg and cniVersion, an ADD result that does
// not validate (want: the configuration's version), or output on success
// of a verb that prints nothing.
func CheckProtocol(o Outcome, want string) []string {
	var bad []string
	if o.StartErr != nil {
		return []string{fmt.Sprintf("could not run the plugin: %v", o.StartErr)}
	}
	if o.TimedOut {
		bad = append(bad, "timed out (a hang, or a wait without bound)")
	}
	for _, m := range stackMarkers {
		for name, stream := range map[string][]byte{"stdout": o.Stdout, "stderr": o.Stderr} {
			if bytes.Contains(stream, []byte(m)) {
				bad = append(bad, fmt.Sprintf("%q on %s: a Go panic or stack", m, name))
			}
		}
	}
	if o.Exit == 2 {
		bad = append(bad, "exit status 2 (the Go runtime's status for a panic)")
	}
	switch {
	case o.Exit != 0:
		bad = append(bad, checkErrorObject(o.Stdout)...)
	case o.Verb == "ADD":
		if err := ValidateResult(o.Stdout, want); err != nil {
			bad = append(bad, "ADD result: "+strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	case len(bytes.TrimSpace(o.Stdout)) > 0:
		bad = append(bad, fmt.Sprintf("spec: %s succeeded but printed %d bytes", o.Verb, len(o.Stdout)))
	}
	return bad
}

// checkErrorObject checks that stdout is exactly one JSON object with a
// numeric code, a string msg and a string cniVersion, and that it is not
// the mark of a recovered panic.
func checkErrorObject(stdout []byte) []string {
	tree, err := jsontree.Parse(stdout)
	if err != nil {
		return []string{fmt.Sprintf("failure without exactly one JSON error object on stdout: %v", err)}
	}
	o, ok := tree.(*jsontree.Object)
	if !ok {
		return []string{fmt.Sprintf("failure printed a JSON %s, want an error object", jsontree.TypeName(tree))}
	}
	var bad []string
	v := &validator{}
	v.noDuplicates("error", o)
	if _, ok := v.integer("error.code", o, "code", 0, -1); !ok {
		if _, given := o.Get("code"); !given {
			v.fail("error.code: required")
		}
	}
	msg, _ := v.str("error.msg", o, "msg", true)
	v.str("error.cniVersion", o, "cniVersion", true)
	v.str("error.details", o, "details", false)
	for _, err := range v.errs {
		bad = append(bad, err.Error())
	}
	if strings.Contains(msg, recoveredMarker) {
		bad = append(bad, "a panic caught by the last-resort recover: "+msg)
	}
	return bad
}

// ConfigVersion returns the cniVersion a plugin decoding text with
// encoding/json reads (the last of duplicate keys, any letter case), or
// "0.1.0" when there is none, as the spec's oldest version implies.
func ConfigVersion(text []byte) string {
	var c struct {
		CNIVersion string `json:"cniVersion"`
	}
	if json.Unmarshal(text, &c) != nil || c.CNIVersion == "" {
		return "0.1.0"
	}
	return c.CNIVersion
}
