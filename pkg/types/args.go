package types

import (
	"sort"
	"strings"
)

// Args holds the parsed CNI_ARGS pairs.
type Args map[string]string

// alwaysKnown are the CNI_ARGS keys every plugin tolerates: those of the
// conventions document and those every Kubernetes runtime sends.
var alwaysKnown = []string{
	"IgnoreUnknown", "IP", "MAC",
	"K8S_POD_NAMESPACE", "K8S_POD_NAME", "K8S_POD_INFRA_CONTAINER_ID", "K8S_POD_UID",
}

// ParseArgs parses CNI_ARGS, "K=V;K=V". Keys are case-sensitive; a value may
// contain '=' and may be empty; empty pairs (a trailing ';') are skipped. A key
// that is neither always known nor in known is refused with
// ErrUnsupportedField unless IgnoreUnknown is true.
func ParseArgs(s string, known ...string) (Args, error) {
	args := Args{}
	for _, pair := range strings.Split(s, ";") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, Errorf(ErrInvalidEnv, "CNI_ARGS: invalid pair %q: want KEY=VALUE", pair)
		}
		if _, dup := args[key]; dup {
			return nil, Errorf(ErrInvalidEnv, "CNI_ARGS: key %q given twice", key)
		}
		args[key] = value
	}
	ignore, err := args.ignoreUnknown()
	if err != nil || ignore {
		return args, err
	}
	if unknown := args.unknown(known); len(unknown) > 0 {
		return nil, Errorf(ErrUnsupportedField, "CNI_ARGS: unknown key(s) %s (set IgnoreUnknown=1 to ignore them)",
			strings.Join(unknown, ", "))
	}
	return args, nil
}

func (a Args) ignoreUnknown() (bool, error) {
	v, ok := a["IgnoreUnknown"]
	if !ok {
		return false, nil
	}
	switch strings.ToLower(v) {
	case "1", "true":
		return true, nil
	case "0", "false", "":
		return false, nil
	}
	return false, Errorf(ErrInvalidEnv, "CNI_ARGS: IgnoreUnknown=%q: want 1, 0, true or false", v)
}

func (a Args) unknown(known []string) []string {
	var out []string
	for k := range a {
		if !contains(alwaysKnown, k) && !contains(known, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
