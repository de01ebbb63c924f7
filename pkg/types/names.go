package types

import (
	"regexp"
	"strings"
	"unicode"
)

// idPattern is what container IDs and network names must look like: they
// become parts of file paths and rule comments.
var idPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// MaxIfNameLen is the kernel's limit on interface names (IFNAMSIZ - 1).
const MaxIfNameLen = 15

// ValidateContainerID checks a container ID; a bad one wraps ErrInvalidEnv.
func ValidateContainerID(id string) error {
	if !idPattern.MatchString(id) {
		return Errorf(ErrInvalidEnv, "CNI_CONTAINERID %q: must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", id)
	}
	return nil
}

// ValidateNetworkName checks a network name; a bad one wraps ErrInvalidConfig.
func ValidateNetworkName(name string) error {
	if name == "" {
		return Errorf(ErrInvalidConfig, "name: missing network name")
	}
	if !idPattern.MatchString(name) {
		return Errorf(ErrInvalidConfig, "name %q: must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", name)
	}
	return nil
}

// ValidateIfName checks an interface name the way the kernel and the
// specification want it; a bad one wraps ErrInvalidEnv.
func ValidateIfName(name string) error {
	switch {
	case name == "":
		return Errorf(ErrInvalidEnv, "CNI_IFNAME: interface name is empty")
	case len(name) > MaxIfNameLen:
		return Errorf(ErrInvalidEnv, "CNI_IFNAME %q: longer than %d bytes", name, MaxIfNameLen)
	case name == "." || name == "..":
		return Errorf(ErrInvalidEnv, "CNI_IFNAME %q: not a valid interface name", name)
	case strings.ContainsAny(name, "/:"):
		return Errorf(ErrInvalidEnv, "CNI_IFNAME %q: must not contain '/' or ':'", name)
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return Errorf(ErrInvalidEnv, "CNI_IFNAME %q: must not contain whitespace", name)
	}
	return nil
}
