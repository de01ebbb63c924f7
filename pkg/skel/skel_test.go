package skel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"cnisuite/pkg/types"
)

// recorder is a plugin that records the verb it was called for.
type recorder struct {
	called string
	args   *CmdArgs
	err    error
}

func (r *recorder) plugin() *Plugin {
	rec := func(verb string) func(context.Context, *CmdArgs) error {
		return func(_ context.Context, a *CmdArgs) error {
			r.called, r.args = verb, a
			return r.err
		}
	}
	return &Plugin{
		Name: "test",
		Add: func(_ context.Context, a *CmdArgs) (*types.Result, error) {
			r.called, r.args = "ADD", a
			if r.err != nil {
				return nil, r.err
			}
			ip, _ := types.ParseCIDR("10.0.0.2/24")
			return &types.Result{IPs: []*types.IPConfig{{Address: *ip}}}, nil
		},
		Check: rec("CHECK"), Del: rec("DEL"), GC: rec("GC"), Status: rec("STATUS"),
	}
}

type outcome struct {
	status int
	stdout string
	stderr string
	err    *types.Error
}

func run(t *testing.T, p *Plugin, env []string, stdin string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	status := p.Run(env, strings.NewReader(stdin), &stdout, &stderr)
	o := outcome{status: status, stdout: stdout.String(), stderr: stderr.String()}
	if status != 0 {
		o.err = &types.Error{}
		if err := json.Unmarshal(stdout.Bytes(), o.err); err != nil {
			t.Fatalf("status %d but stdout is not an error object: %q", status, o.stdout)
		}
	}
	return o
}

func env(cmd string, extra ...string) []string {
	base := []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=c1", "CNI_NETNS=/var/run/netns/x",
		"CNI_IFNAME=eth0", "CNI_PATH=/opt/cni/bin"}
	return append(base, extra...)
}

func without(envs []string, key string) []string {
	var out []string
	for _, kv := range envs {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

const conf11 = `{"cniVersion":"1.1.0","name":"net1","type":"test"}`

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		stdin    string
		wantCode uint
		wantMsg  string
	}{
		{"unknown command", env("FROB"), conf11, 4, "unknown CNI_COMMAND: FROB"},
		{"missing containerid", without(env("ADD"), "CNI_CONTAINERID"), conf11, 4, "[CNI_CONTAINERID]"},
		{"missing several in order", without(without(env("ADD"), "CNI_PATH"), "CNI_NETNS"), conf11, 4, "[CNI_NETNS,CNI_PATH]"},
		{"check needs netns", without(env("CHECK"), "CNI_NETNS"), conf11, 4, "CNI_NETNS"},
		{"status needs path", without(env("STATUS"), "CNI_PATH"), conf11, 4, "CNI_PATH"},
		{"bad container id", append(without(env("ADD"), "CNI_CONTAINERID"), "CNI_CONTAINERID=-x"), conf11, 4, `"-x"`},
		{"ifname too long", append(without(env("DEL"), "CNI_IFNAME"), "CNI_IFNAME=abcdefghijklmnop"), conf11, 4, "longer than 15"},
		{"ifname slash", append(without(env("DEL"), "CNI_IFNAME"), "CNI_IFNAME=a/b"), conf11, 4, "'/'"},
		{"ifname dotdot", append(without(env("DEL"), "CNI_IFNAME"), "CNI_IFNAME=.."), conf11, 4, `".."`},
		{"ifname space", append(without(env("DEL"), "CNI_IFNAME"), "CNI_IFNAME=a b"), conf11, 4, "whitespace"},
		{"stdin not json", env("ADD"), `{"cniVersion":`, 6, "decoding network configuration"},
		{"missing name", env("ADD"), `{"cniVersion":"1.0.0"}`, 7, "missing network name"},
		{"bad name", env("DEL"), `{"cniVersion":"1.0.0","name":"../etc"}`, 7, `name "../etc"`},
		{"unsupported version", env("ADD"), `{"cniVersion":"0.5.0","name":"n"}`, 1, "incompatible CNI versions"},
		{"check too old", env("CHECK"), `{"cniVersion":"0.3.1","name":"n"}`, 1, "does not allow CHECK"},
		{"gc too old", env("GC"), `{"cniVersion":"1.0.0","name":"n"}`, 1, "does not allow GC"},
		{"status too old", env("STATUS"), `{"cniVersion":"0.4.0","name":"n"}`, 1, "does not allow STATUS"},
		{"no version means 0.1.0", env("CHECK"), `{"name":"n"}`, 1, `"0.1.0" does not allow CHECK`},
		{"own netns", append(without(env("ADD"), "CNI_NETNS"), "CNI_NETNS=/proc/self/ns/net"), conf11, 4, "own network namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			o := run(t, r.plugin(), tt.env, tt.stdin)
			if o.status != 1 || o.err.Code != tt.wantCode || !strings.Contains(o.err.Error(), tt.wantMsg) {
				t.Fatalf("Run = %d %+v, want code %d with %q", o.status, o.err, tt.wantCode, tt.wantMsg)
			}
			if o.err.CNIVersion == "" {
				t.Errorf("error object has no cniVersion: %s", o.stdout)
			}
			if r.called != "" {
				t.Errorf("plugin's %s ran although the invocation was refused", r.called)
			}
		})
	}
}

func TestRunDispatch(t *testing.T) {
	tests := []struct {
		verb  string
		env   []string
		stdin string
	}{
		{"ADD", env("ADD"), conf11},
		{"CHECK", env("CHECK"), conf11},
		{"DEL", without(env("DEL"), "CNI_NETNS"), `{"cniVersion":"0.1.0","name":"n"}`},
		{"GC", []string{"CNI_COMMAND=GC", "CNI_PATH=/x"}, conf11},
		{"STATUS", []string{"CNI_COMMAND=STATUS", "CNI_PATH=/x"}, conf11},
		{"ADD", append(without(env("ADD"), "CNI_NETNS"), "CNI_NETNS=/proc/self/ns/net", "CNI_NETNS_OVERRIDE=TRUE"), conf11},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			r := &recorder{}
			o := run(t, r.plugin(), tt.env, tt.stdin)
			if o.status != 0 || r.called != tt.verb {
				t.Fatalf("Run = %d (stdout %q), called %q; want 0 and %s", o.status, o.stdout, r.called, tt.verb)
			}
			if string(r.args.StdinData) != tt.stdin {
				t.Errorf("StdinData = %q, want %q", r.args.StdinData, tt.stdin)
			}
		})
	}
}

func TestAddPrintsConfigVersion(t *testing.T) {
	for _, v := range []string{"0.2.0", "0.4.0", "1.0.0", "1.1.0"} {
		t.Run(v, func(t *testing.T) {
			r := &recorder{}
			o := run(t, r.plugin(), env("ADD"), `{"cniVersion":"`+v+`","name":"n"}`)
			var head struct{ CNIVersion string }
			if err := json.Unmarshal([]byte(o.stdout), &head); err != nil || head.CNIVersion != v {
				t.Fatalf("ADD printed %q; want a result at %s", o.stdout, v)
			}
		})
	}
}

func TestPluginErrorCodes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code uint
	}{
		{"invalid config", types.Errorf(types.ErrInvalidConfig, "bridge %q: bad", "x"), 7},
		{"try again", types.Errorf(types.ErrTryAgain, "busy"), 11},
		{"not available", types.Errorf(types.ErrNotAvailable, "no"), 50},
		{"limited", types.Errorf(types.ErrLimitedConnectivity, "no"), 51},
		{"unknown container", types.Errorf(types.ErrUnknownContainer, "no"), 3},
		{"io", types.Errorf(types.ErrIO, "disk"), 5},
		{"unsupported field", types.Errorf(types.ErrUnsupportedField, "x"), 2},
		{"delegate passes through", &types.Error{Code: 42, Msg: "ipam says no"}, 42},
		{"wrapped delegate", errors.Join(errors.New("context"), &types.Error{Code: 11, Msg: "busy"}), 11},
		{"unexpected", errors.New("boom"), 999},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{err: tt.err}
			o := run(t, r.plugin(), env("ADD"), conf11)
			if o.status != 1 || o.err.Code != tt.code {
				t.Fatalf("code = %+v, want %d", o.err, tt.code)
			}
			if o.err.CNIVersion != "1.1.0" {
				t.Errorf("error cniVersion = %q, want 1.1.0", o.err.CNIVersion)
			}
		})
	}
}

func TestVersionAndAbout(t *testing.T) {
	p := (&recorder{}).plugin()
	o := run(t, p, []string{"CNI_COMMAND=VERSION"}, `{"cniVersion":"0.4.0"}`)
	want := `{"cniVersion":"0.4.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}` + "\n"
	if o.status != 0 || o.stdout != want {
		t.Errorf("VERSION = %d %q, want %q", o.status, o.stdout, want)
	}
	o = run(t, p, []string{"CNI_COMMAND=VERSION"}, `garbage`)
	if !strings.HasPrefix(o.stdout, `{"cniVersion":"1.1.0"`) {
		t.Errorf("VERSION with bad stdin = %q, want the current version", o.stdout)
	}
	o = run(t, p, nil, "")
	if o.status != 0 || o.stdout != "" || !strings.Contains(o.stderr, "CNI test plugin") || !strings.Contains(o.stderr, "1.1.0") {
		t.Errorf("about = %d %q %q", o.status, o.stdout, o.stderr)
	}
}

func TestMissingVerbIsInternalError(t *testing.T) {
	p := &Plugin{Name: "half"}
	o := run(t, p, []string{"CNI_COMMAND=GC", "CNI_PATH=/x"}, conf11)
	if o.status != 1 || o.err.Code != 999 {
		t.Fatalf("GC on a plugin without GC = %+v, want code 999", o.err)
	}
}

// A panic inside a verb is the safety net's case: the runtime still reads
// one error object with code 999 and the panic's message, and no stack.
func TestPanicBecomesInternalError(t *testing.T) {
	var nilMap map[string]*int
	p := &Plugin{Name: "fragile", Status: func(context.Context, *CmdArgs) error {
		_ = *nilMap["x"]
		return nil
	}}
	o := run(t, p, []string{"CNI_COMMAND=STATUS", "CNI_PATH=/x"}, conf11)
	if o.status != 1 || o.err.Code != types.CodeInternal {
		t.Fatalf("STATUS that panics = %d %+v, want status 1 and code 999", o.status, o.err)
	}
	if !strings.Contains(o.err.Msg, "nil pointer dereference") || !strings.Contains(o.err.Details, "skel_test.go:") {
		t.Errorf("error = %+v, want the panic message and the file:line of the panic", o.err)
	}
	if strings.Contains(o.stdout+o.stderr, "goroutine ") {
		t.Errorf("a Go stack was printed: %q %q", o.stdout, o.stderr)
	}
}

// The per-call log: one line per call in the file the configuration names,
// with the identity of the call, its result or error code, and the steps the
// plugin timed; unusable settings cost a line on stderr, never the call.
func TestPerCallLog(t *testing.T) {
	path := t.TempDir() + "/cni.log"
	conf := `{"cniVersion":"1.1.0","name":"net1","logFile":"` + path + `"}`
	r := &recorder{}
	p := r.plugin()
	add := p.Add
	p.Add = func(ctx context.Context, a *CmdArgs) (*types.Result, error) {
		a.Log.Step("veth")()
		return add(ctx, a)
	}
	env := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=/run/netns/x", "CNI_IFNAME=eth0", "CNI_PATH=/x",
		"TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	if o := run(t, p, env, conf); o.status != 0 {
		t.Fatalf("ADD with a log = %+v", o)
	}
	r.err = types.Errorf(types.ErrInvalidConfig, "bad key")
	if o := run(t, p, append(env[:4:4], "CNI_COMMAND=DEL", "CNI_PATH=/x"), conf); o.status != 1 {
		t.Fatalf("failing DEL = %+v", o)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("log holds %d lines, want 2:\n%s", len(lines), data)
	}
	for i, want := range []string{`"verb":"ADD"`, `"containerID":"c1"`, `"network":"net1"`, `"traceparent":"00-0af7`, `"name":"veth"`, `"result":{"cniVersion":"1.1.0"`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("ADD line %d lacks %s: %s", i, want, lines[0])
		}
	}
	if !strings.Contains(lines[1], `"verb":"DEL"`) || !strings.Contains(lines[1], `"code":7`) || !strings.Contains(lines[1], `"msg":"bad key"`) {
		t.Errorf("DEL line lacks its error: %s", lines[1])
	}

	r.err = nil
	o := run(t, p, env, `{"cniVersion":"1.1.0","name":"net1","logFile":"relative.log"}`)
	if o.status != 0 || !strings.Contains(o.stderr, `per-call log off: logFile "relative.log"`) {
		t.Errorf("ADD with a relative logFile = %d, stderr %q; want success and a warning", o.status, o.stderr)
	}
	o = run(t, p, env, `{"cniVersion":"1.1.0","name":"net1","logFile":5}`)
	if o.status != 0 || !strings.Contains(o.stderr, "per-call log off: logFile 5: must be a string") {
		t.Errorf("ADD with a logFile of the wrong type = %d, stderr %q; want success and a warning", o.status, o.stderr)
	}
	o = run(t, p, env, `{"cniVersion":"1.1.0","name":"net1","logFile":null,"logLevel":null}`)
	if o.status != 0 || o.stderr != "" {
		t.Errorf("ADD with null log keys = %d, stderr %q; want success and no log", o.status, o.stderr)
	}
	o = run(t, p, env, `{"cniVersion":"1.1.0","name":"net1","logFile":"/nonexistent-dir/cni.log"}`)
	if o.status != 0 || !strings.Contains(o.stderr, "per-call log: opening log file") {
		t.Errorf("ADD with an unwritable logFile = %d, stderr %q; want success and a warning", o.status, o.stderr)
	}
}

// A configuration past MaxConfigSize is refused with code 7 naming the
// limit, read no further than the limit; one just below it is read whole.
// Before the limit, a 100 MB stdin made bridge peak at 356-500 MB.
func TestStdinLimit(t *testing.T) {
	pad := func(n int) string {
		head := `{"cniVersion":"1.1.0","name":"net1","type":"test","x":"`
		return head + strings.Repeat("a", n-len(head)-2) + `"}`
	}
	r := &recorder{}
	if o := run(t, r.plugin(), env("DEL"), pad(MaxConfigSize)); o.status != 0 || len(r.args.StdinData) != MaxConfigSize {
		t.Errorf("DEL with %d bytes = %+v (%d read), want success", MaxConfigSize, o.err, len(r.args.StdinData))
	}
	o := run(t, r.plugin(), env("ADD"), pad(MaxConfigSize+1))
	if o.err == nil || o.err.Code != types.CodeInvalidConfig || !strings.Contains(o.err.Msg, "16 MiB") {
		t.Errorf("ADD with %d bytes = %+v, want code 7 naming the limit", MaxConfigSize+1, o.err)
	}
}

// RunConfig hands the plugin the caller's bytes, not a copy.
func TestRunConfigSharesBytes(t *testing.T) {
	r := &recorder{}
	config := []byte(conf11)
	var stdout, stderr bytes.Buffer
	if status := r.plugin().RunConfig(env("DEL"), config, &stdout, &stderr); status != 0 {
		t.Fatalf("RunConfig = %d: %s", status, stdout.String())
	}
	if &r.args.StdinData[0] != &config[0] {
		t.Error("the plugin got a copy of the configuration")
	}
}

func TestGetenvFromTheCall(t *testing.T) {
	a := &CmdArgs{Env: []string{"A=1", "B=x=y", "A=2", "EMPTY="}}
	for key, want := range map[string]string{"A": "2", "B": "x=y", "EMPTY": "", "MISSING": ""} {
		if got := a.Getenv(key); got != want {
			t.Errorf("Getenv(%q) = %q, want %q", key, got, want)
		}
	}
}

// The trace variable of the call's environment, not the process's, turns
// the step lines on.
func TestStepTimerTrace(t *testing.T) {
	var stderr strings.Builder
	a := &CmdArgs{Env: []string{"X_TRACE=1"}, Stderr: &stderr}
	a.StepTimer("X_TRACE", "bridge").Step("setupVeth")()
	if got := stderr.String(); !strings.HasPrefix(got, "bridge: setupVeth ") {
		t.Errorf("traced step printed %q, want a line starting %q", got, "bridge: setupVeth ")
	}
	if tm := (&CmdArgs{Stderr: &stderr}).StepTimer("X_TRACE", "bridge"); tm != nil {
		t.Errorf("StepTimer without trace or log = %v, want nil", tm)
	}
}
