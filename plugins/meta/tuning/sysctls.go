package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"cnisuite/pkg/jsonobject"
	"cnisuite/pkg/types"
)

// DefaultAllowListPath is the operator's allow-list of sysctl keys: one
// regular expression a line, each matching a whole key.
const DefaultAllowListPath = "/etc/cni/tuning/allowlist.conf"

// ifnamePlaceholder is the key component replaced by CNI_IFNAME.
const ifnamePlaceholder = "IFNAME"

// Sysctl is one sysctl setting, its key as the user wrote it.
type Sysctl struct {
	Key   string
	Value string
}

// Sysctls is the ordered content of a "sysctl" JSON object. Decoding refuses
// duplicate keys and values that are not JSON strings, so that nothing is
// silently dropped or coerced.
type Sysctls []Sysctl

// UnmarshalJSON reads a JSON object of string values, keeping the order of
// its keys.
func (s *Sysctls) UnmarshalJSON(data []byte) error {
	out := Sysctls{}
	isObject, err := jsonobject.Decode(data, "sysctl", "a JSON object of strings", func(key string, raw json.RawMessage) error {
		var value string
		if err := json.Unmarshal(raw, &value); err != nil || raw[0] != '"' {
			return types.Errorf(types.ErrInvalidConfig,
				"sysctl %q: value %s is not a JSON string (write it in quotes)", key, raw)
		}
		out = append(out, Sysctl{Key: key, Value: value})
		return nil
	})
	if err != nil {
		return err
	}
	*s = nil
	if isObject {
		*s = out
	}
	return nil
}

// MarshalJSON writes the settings back as a JSON object, in order.
func (s Sysctls) MarshalJSON() ([]byte, error) {
	return jsonobject.Encode(len(s), func(i int) (string, any) { return s[i].Key, s[i].Value })
}

// Merge returns s with the settings of over added, a key of over replacing
// the same key of s in place.
func (s Sysctls) Merge(over Sysctls) Sysctls {
	return jsonobject.MergeByKey(s, over, func(x Sysctl) string { return x.Key })
}

// SysctlPath turns a key into its path relative to /proc/sys, with
// components separated by '/'. A key containing '/' is read with '/' as
// separator (dots then belong to names, as in "net/ipv4/conf/eth0.100/
// rp_filter"); otherwise every '.' separates. A component that is exactly
// IFNAME becomes ifName. The result must lie under net/ and may not contain
// "." or ".." components.
func SysctlPath(key, ifName string) (string, error) {
	if key == "" {
		return "", types.Errorf(types.ErrInvalidConfig, "sysctl key %q: empty", key)
	}
	if strings.ContainsRune(key, 0) {
		return "", types.Errorf(types.ErrInvalidConfig, "sysctl key %q: contains a NUL byte", key)
	}
	sep := "."
	if strings.Contains(key, "/") {
		sep = "/"
	}
	parts := strings.Split(strings.TrimPrefix(key, "/"), sep)
	for i, p := range parts {
		if p == ifnamePlaceholder {
			parts[i] = ifName
		}
		switch parts[i] {
		case "":
			return "", types.Errorf(types.ErrInvalidConfig, "sysctl key %q: empty path component", key)
		case ".", "..":
			return "", types.Errorf(types.ErrInvalidConfig,
				"sysctl key %q: path component %q would leave /proc/sys/net", key, parts[i])
		}
		if strings.Contains(parts[i], "/") {
			return "", types.Errorf(types.ErrInvalidConfig,
				"sysctl key %q: interface name %q contains '/'", key, ifName)
		}
	}
	if len(parts) < 2 || parts[0] != "net" {
		return "", types.Errorf(types.ErrInvalidConfig,
			"sysctl key %q: invalid net sysctl key: only keys under /proc/sys/net are allowed", key)
	}
	return strings.Join(parts, "/"), nil
}

// AllowList is the operator's list of permitted sysctl keys. A nil AllowList
// (no file) permits every key under net.
type AllowList struct {
	path     string
	patterns []*regexp.Regexp
	sources  []string
}

// LoadAllowList reads the allow-list at path. A missing file gives nil and
// no error. Empty lines and lines starting with '#' are skipped; every other
// line is a regular expression that must match a whole key.
func LoadAllowList(path string) (*AllowList, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, types.Errorf(types.ErrIO, "reading sysctl allow-list %s: %w", path, err)
	}
	al := &AllowList{path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		re, err := regexp.Compile(`^(?:` + line + `)$`)
		if err != nil {
			return nil, types.Errorf(types.ErrInvalidConfig, "sysctl allow-list %s line %d: %w", path, n, err)
		}
		al.patterns = append(al.patterns, re)
		al.sources = append(al.sources, line)
	}
	if err := sc.Err(); err != nil {
		return nil, types.Errorf(types.ErrIO, "reading sysctl allow-list %s: %w", path, err)
	}
	return al, nil
}

// Allows reports whether key, as written in the configuration, is permitted:
// some line matches the whole key, or the whole of its dotted form when the
// key is written with '/'.
func (al *AllowList) Allows(key string) bool {
	if al == nil {
		return true
	}
	forms := []string{key}
	if strings.Contains(key, "/") {
		forms = append(forms, strings.ReplaceAll(strings.TrimPrefix(key, "/"), "/", "."))
	}
	for _, re := range al.patterns {
		for _, f := range forms {
			if re.MatchString(f) {
				return true
			}
		}
	}
	return false
}

// Check returns an invalid-configuration error naming every key of s that
// the list does not permit.
func (al *AllowList) Check(s Sysctls) error {
	var errs []error
	for _, item := range s {
		if !al.Allows(item.Key) {
			errs = append(errs, types.Errorf(types.ErrInvalidConfig,
				"sysctl %q is not allowed by %s (allowed: %s)", item.Key, al.path, strings.Join(al.sources, ", ")))
		}
	}
	return errors.Join(errs...)
}
