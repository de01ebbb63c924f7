// Package calllog is the opt-in per-call log of the plugins: one JSON line
// per call, written to the file the network configuration names in
// "logFile", at the detail "logLevel" asks for (error, info or debug).
//
// A line tells who called (verb, network, container, netns, interface, the
// W3C trace context a runtime passed in TRACEPARENT), what came of it (the
// result or the CNI error code and message) and where the time went (the
// duration of each named step). At debug, plugins add what they wrote to
// the kernel (rules, links, addresses).
//
// Logging never fails a call: a log that cannot be written costs one line
// on stderr. The file is appended to with one write per line, so parallel
// calls never interleave, created 0600, and rotated to "<logFile>.1" once it
// would grow past MaxSize.
package calllog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// MaxSize is the size past which the log file is rotated to "<file>.1",
// replacing the previous rotated file: at most twice MaxSize on disk.
const MaxSize = 10 << 20

// Level is how much a line says.
type Level int

// The levels, from terse to verbose.
const (
	LevelError Level = iota // only failed calls
	LevelInfo               // every call but successful STATUS and VERSION
	LevelDebug              // every call, with what was written to the kernel
)

var levels = map[string]Level{"error": LevelError, "info": LevelInfo, "debug": LevelDebug}

// Settings are the log keys of a network configuration.
type Settings struct {
	File  string `json:"logFile,omitempty"`
	Level string `json:"logLevel,omitempty"`
}

// Parse checks the settings and returns the level; a path that is not
// absolute or a level that is not known is an error naming the key.
func (s Settings) Parse() (Level, error) {
	if !filepath.IsAbs(s.File) || filepath.Clean(s.File) != s.File {
		return 0, fmt.Errorf("logFile %q: must be a clean absolute path", s.File)
	}
	if s.Level == "" {
		return LevelInfo, nil
	}
	l, ok := levels[s.Level]
	if !ok {
		return 0, fmt.Errorf("logLevel %q: must be error, info or debug", s.Level)
	}
	return l, nil
}

// Identity is who a call is for.
type Identity struct {
	Plugin      string `json:"plugin"`
	Verb        string `json:"verb"`
	Network     string `json:"network,omitempty"`
	ContainerID string `json:"containerID,omitempty"`
	Netns       string `json:"netns,omitempty"`
	IfName      string `json:"ifname,omitempty"`
	TraceParent string `json:"traceparent,omitempty"`
}

// Call records one plugin call. A nil *Call records nothing, so plugins
// call its methods without checking whether logging is on.
type Call struct {
	file  string
	level Level
	limit int64 // rotation size
	start time.Time

	mu       sync.Mutex
	steps    []Step
	debug    []Detail
	warnings []string
}

// Step is the duration of one named step.
type Step struct {
	Name string  `json:"name"`
	MS   float64 `json:"ms"`
}

// Detail is one object a plugin wrote, logged at debug.
type Detail struct {
	What  string `json:"what"`
	Value any    `json:"value"`
}

// Start begins the record of a call at the given level, to be written to
// file by Finish.
func Start(file string, level Level) *Call {
	return &Call{file: file, level: level, limit: MaxSize, start: time.Now()}
}

// Step starts the named step and returns the function that ends it. Steps
// may run concurrently.
func (c *Call) Step(name string) func() {
	if c == nil {
		return func() {}
	}
	begin := time.Now()
	return func() {
		ms := float64(time.Since(begin).Microseconds()) / 1000
		c.mu.Lock()
		defer c.mu.Unlock()
		c.steps = append(c.steps, Step{name, ms})
	}
}

// Debug records an object written to the kernel; it is kept only at debug
// level, so building value is the only cost otherwise.
func (c *Call) Debug(what string, value any) {
	if c == nil || c.level < LevelDebug {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.debug = append(c.debug, Detail{what, value})
}

// Warn records something the call noticed and went on with (a key it does
// not know); warnings are kept at every level that writes the line.
func (c *Call) Warn(msg string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warnings = append(c.warnings, msg)
}

// Debugging reports whether details are kept, so a plugin can skip
// building an expensive value.
func (c *Call) Debugging() bool { return c != nil && c.level >= LevelDebug }

// ValidTraceParent returns tp when it is a well-formed W3C traceparent
// (version, trace ID, parent span ID and flags: 2, 32, 16 and 2 lowercase
// hex digits joined by '-'), and "" otherwise, so that nothing else from
// the environment reaches the log.
func ValidTraceParent(tp string) string {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 {
		return ""
	}
	for i, n := range []int{2, 32, 16, 2} {
		if len(parts[i]) != n || strings.Trim(parts[i], "0123456789abcdef") != "" {
			return ""
		}
	}
	return tp
}

// Outcome is how a call ended: a result, or a CNI error.
type Outcome struct {
	Result json.RawMessage
	Code   uint
	Msg    string
}

// line is one log line.
type line struct {
	Time string `json:"time"`
	// PID is the process that made the call: bridge runs host-local in
	// its own process when it can (pkg/invoke), and both lines then carry
	// bridge's.
	PID int `json:"pid"`
	Identity
	DurationMS float64         `json:"durationMs"`
	Steps      []Step          `json:"steps,omitempty"`
	Code       uint            `json:"code,omitempty"`
	Msg        string          `json:"msg,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
	Debug      []Detail        `json:"debug,omitempty"`
}

// Finish writes the call's line, when its level asks for it, and returns
// the failure to write it (the caller reports it on stderr and goes on).
func (c *Call) Finish(id Identity, out Outcome) error {
	if c == nil || !c.wanted(id.Verb, out) {
		return nil
	}
	c.mu.Lock()
	l := line{
		Time: c.start.UTC().Format(time.RFC3339Nano), PID: os.Getpid(), Identity: id,
		DurationMS: float64(time.Since(c.start).Microseconds()) / 1000,
		Steps:      c.steps, Code: out.Code, Msg: out.Msg, Result: compact(out.Result), Warnings: c.warnings, Debug: c.debug,
	}
	c.mu.Unlock()
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encoding log line: %w", err)
	}
	return appendLine(c.file, append(data, '\n'), c.limit)
}

func (c *Call) wanted(verb string, out Outcome) bool {
	switch {
	case out.Code != 0:
		return true
	case c.level == LevelError:
		return false
	case verb == "STATUS" || verb == "VERSION":
		return c.level >= LevelDebug
	}
	return true
}

// compact returns the result on one line, or nil if it is not JSON.
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}
