package firewall

import (
	"bytes"
	"encoding/json"
	"errors"

	"cnisuite/pkg/types"
)

// IsolationKeys are the bridge configuration keys of Isolation, as given:
// icc (a boolean), isolate (false, true or "strict") and ingressFilter (a
// boolean).
type IsolationKeys struct {
	ICC, Isolate, IngressFilter json.RawMessage
}

// ParseIsolation decodes the keys into Isolation's NoICC, Isolate and
// FilterIngress (the rest of iso is left alone). They are decoded by hand
// so that a wrong type is an invalid configuration (code 7) reported with
// every other problem, not a decoding failure; an absent key leaves its
// default (ICC on, no isolation, no ingress filter).
func ParseIsolation(k IsolationKeys, iso *Isolation) error {
	var errs []error
	if len(k.ICC) > 0 {
		on, err := decodeBool("icc", k.ICC)
		errs = append(errs, err)
		iso.NoICC = !on
	}
	if len(k.IngressFilter) > 0 {
		on, err := decodeBool("ingressFilter", k.IngressFilter)
		errs = append(errs, err)
		iso.FilterIngress = on
	}
	switch string(k.Isolate) {
	case "", "false":
	case "true":
		iso.Isolate = IsolateOn
	case `"strict"`:
		iso.Isolate = IsolateStrict
	default:
		errs = append(errs, types.Errorf(types.ErrInvalidConfig, `isolate %s: must be false, true or "strict"`, k.Isolate))
	}
	return errors.Join(errs...)
}

// decodeBool decodes the value of key, true or false (null refused).
func decodeBool(key string, raw json.RawMessage) (bool, error) {
	var on bool
	if bytes.Equal(raw, []byte("null")) || json.Unmarshal(raw, &on) != nil {
		return false, types.Errorf(types.ErrInvalidConfig, "%s %s: must be true or false", key, raw)
	}
	return on, nil
}
