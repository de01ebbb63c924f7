package skel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"cnisuite/pkg/calllog"
	"cnisuite/pkg/ns"
	"cnisuite/pkg/types"
	"cnisuite/pkg/version"
)

// invocation is one run of the protocol.
type invocation struct {
	plugin *Plugin
	vars   map[string]string
	env    []string
	stdin  io.Reader
	// config, when haveConfig is set, is stdin already read (RunConfig).
	config     []byte
	haveConfig bool
	stdout     io.Writer
	stderr     io.Writer

	confVersion string
	result      []byte // what ADD printed
	log         *calllog.Call
	network     string
}

func (inv *invocation) errVersion() string {
	if inv.confVersion != "" && version.Supported(inv.confVersion) {
		return inv.confVersion
	}
	return version.Current
}

func (inv *invocation) run() error {
	cmd := inv.vars["CNI_COMMAND"]
	req, ok := required[cmd]
	if !ok {
		return types.Errorf(types.ErrInvalidEnv, "unknown CNI_COMMAND: %s", cmd)
	}
	if cmd == "VERSION" {
		return inv.version()
	}
	args, err := inv.cmdArgs(cmd, req)
	if err != nil {
		return err
	}
	if err := inv.readConfig(args); err != nil {
		return err
	}
	if err := negotiate(cmd, inv.confVersion); err != nil {
		return err
	}
	if err := inv.guardOwnNetns(cmd, args); err != nil {
		return err
	}
	return inv.dispatch(context.Background(), args)
}

// required lists, per verb, the variables that must be set, in the order
// they are reported.
var required = map[string][]string{
	"ADD":     {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"},
	"CHECK":   {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"},
	"DEL":     {"CNI_CONTAINERID", "CNI_IFNAME", "CNI_PATH"},
	"GC":      {"CNI_PATH"},
	"STATUS":  {"CNI_PATH"},
	"VERSION": {},
}

func (inv *invocation) cmdArgs(cmd string, req []string) (*CmdArgs, error) {
	var missing []string
	for _, name := range req {
		if inv.vars[name] == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, types.Errorf(types.ErrInvalidEnv, "required environment variables [%s] missing for %s",
			strings.Join(missing, ","), cmd)
	}
	a := &CmdArgs{
		Command: cmd, ContainerID: inv.vars["CNI_CONTAINERID"], Netns: inv.vars["CNI_NETNS"],
		IfName: inv.vars["CNI_IFNAME"], Args: inv.vars["CNI_ARGS"], Path: inv.vars["CNI_PATH"],
		Env: inv.env, Stderr: inv.stderr,
	}
	if cmd == "ADD" || cmd == "CHECK" || cmd == "DEL" {
		if err := types.ValidateContainerID(a.ContainerID); err != nil {
			return nil, err
		}
		if err := types.ValidateIfName(a.IfName); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// MaxConfigSize bounds the network configuration a plugin reads from
// stdin: 16 MiB, over ten times the largest a runtime can send (Kubernetes
// stores a whole pod in at most 1.5 MB; 10,000 port mappings take 1 MB),
// and small enough that no input makes a plugin hold hundreds of MiB.
const MaxConfigSize = 16 << 20

// readStdin reads the network configuration, at most MaxConfigSize bytes.
func (inv *invocation) readStdin() ([]byte, error) {
	if inv.haveConfig {
		if len(inv.config) > MaxConfigSize {
			return nil, tooLarge()
		}
		return inv.config, nil
	}
	data, err := io.ReadAll(io.LimitReader(inv.stdin, MaxConfigSize+1))
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "reading network configuration from stdin: %w", err)
	}
	if len(data) > MaxConfigSize {
		return nil, tooLarge()
	}
	return data, nil
}

func tooLarge() error {
	return types.Errorf(types.ErrInvalidConfig, "network configuration on stdin: larger than the %d MiB a plugin reads", MaxConfigSize>>20)
}

func (inv *invocation) readConfig(a *CmdArgs) error {
	data, err := inv.readStdin()
	if err != nil {
		return err
	}
	head, err := types.DecodeFresh[configHead](data, nil)
	if err != nil {
		return err
	}
	inv.network = head.Name
	inv.startLog(head.LogFile, head.LogLevel, a)
	inv.confVersion = head.CNIVersion
	if inv.confVersion == "" {
		inv.confVersion = "0.1.0"
	}
	a.StdinData = data
	return types.ValidateNetworkName(head.Name)
}

// configHead is what readConfig reads of every configuration.
type configHead struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	// The log keys, read here as they stand so that the configuration
	// is decoded once and a key of the wrong type never fails a call.
	LogFile  json.RawMessage `json:"logFile"`
	LogLevel json.RawMessage `json:"logLevel"`
}

// minimum is the oldest configuration version that knows each verb.
var minimum = map[string]string{
	"CHECK": version.MinCheck, "GC": version.MinGC, "STATUS": version.MinStatus,
}

func negotiate(cmd, v string) error {
	if min, ok := minimum[cmd]; ok && !version.AtLeast(v, min) {
		return types.Errorf(types.ErrIncompatibleVersion,
			"config version %q does not allow %s: it needs cniVersion %s or newer", v, cmd, min)
	}
	if !version.Supported(v) {
		return &types.Error{
			Code:    types.CodeIncompatibleVersion,
			Msg:     "incompatible CNI versions",
			Details: fmt.Sprintf("config is %q, plugin supports %q", v, version.All),
		}
	}
	return nil
}

// guardOwnNetns refuses, before the plugin acts, a CNI_NETNS that is the
// plugin's own network namespace, unless CNI_NETNS_OVERRIDE says otherwise.
func (inv *invocation) guardOwnNetns(cmd string, a *CmdArgs) error {
	if cmd != "ADD" && cmd != "CHECK" && cmd != "DEL" || a.Netns == "" {
		return nil
	}
	switch strings.ToLower(inv.vars["CNI_NETNS_OVERRIDE"]) {
	case "1", "true":
		return nil
	}
	if ns.IsOwn(a.Netns) {
		return types.Errorf(types.ErrInvalidEnv,
			"CNI_NETNS %q is the plugin's own network namespace; refusing to act on it (set CNI_NETNS_OVERRIDE=1 to allow)", a.Netns)
	}
	return nil
}

func (inv *invocation) dispatch(ctx context.Context, a *CmdArgs) error {
	p := inv.plugin
	fns := map[string]func(context.Context, *CmdArgs) error{
		"CHECK": p.Check, "DEL": p.Del, "GC": p.GC, "STATUS": p.Status,
	}
	if a.Command == "ADD" {
		return inv.add(ctx, a)
	}
	fn := fns[a.Command]
	if fn == nil {
		return fmt.Errorf("plugin %s has no %s function", p.Name, a.Command)
	}
	return fn(ctx, a)
}

func (inv *invocation) add(ctx context.Context, a *CmdArgs) error {
	if inv.plugin.Add == nil {
		return fmt.Errorf("plugin %s has no ADD function", inv.plugin.Name)
	}
	r, err := inv.plugin.Add(ctx, a)
	if err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("plugin %s returned no result for ADD", inv.plugin.Name)
	}
	out, err := r.Encode(inv.confVersion)
	if err != nil {
		return err
	}
	inv.result = out
	_, err = inv.stdout.Write(append(out, '\n'))
	if err != nil {
		return types.Errorf(types.ErrIO, "writing result: %w", err)
	}
	return nil
}

// version answers VERSION: the versions supported, and the version asked for
// when there is a supported one on stdin.
func (inv *invocation) version() error {
	answer := version.Current
	if data, err := inv.readStdin(); err == nil {
		var head struct {
			CNIVersion string `json:"cniVersion"`
		}
		if json.Unmarshal(data, &head) == nil && version.Supported(head.CNIVersion) {
			answer = head.CNIVersion
		}
	}
	out, err := json.Marshal(map[string]any{"cniVersion": answer, "supportedVersions": version.All})
	if err != nil {
		return err
	}
	if _, err := inv.stdout.Write(append(out, '\n')); err != nil {
		return types.Errorf(types.ErrIO, "writing version: %w", err)
	}
	return nil
}
