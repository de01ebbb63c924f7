package types

import (
	"fmt"
	"strings"
	"unicode"
)

// isID reports whether s is what container IDs and network names must look
// like, since they become parts of file paths and rule comments: a letter
// or digit, then letters, digits, '_', '.' and '-'. (Written out rather
// than a regular expression compiled at start-up: every plugin process
// pays for its package initialisation.)
func isID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return s != ""
}

// MaxIfNameLen is the kernel's limit on interface names (IFNAMSIZ - 1).
const MaxIfNameLen = 15

// ValidateContainerID checks a container ID; a bad one wraps ErrInvalidEnv.
func ValidateContainerID(id string) error {
	if !isID(id) {
		return Errorf(ErrInvalidEnv, "CNI_CONTAINERID %q: must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", id)
	}
	return nil
}

// ValidateNetworkName checks a network name; a bad one wraps ErrInvalidConfig.
func ValidateNetworkName(name string) error {
	if name == "" {
		return Errorf(ErrInvalidConfig, "name: missing network name")
	}
	if !isID(name) {
		return Errorf(ErrInvalidConfig, "name %q: must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", name)
	}
	return nil
}

// ValidateIfName checks the interface name of CNI_IFNAME the way the kernel
// and the specification want it; a bad one wraps ErrInvalidEnv.
func ValidateIfName(name string) error {
	if why := ifNameProblem(name); why != "" {
		return Errorf(ErrInvalidEnv, "CNI_IFNAME %q: %s", name, why)
	}
	return nil
}

// ValidateLinkName checks an interface name given in the network
// configuration under key (a bridge name, say) by the same rules as
// ValidateIfName; a bad one wraps ErrInvalidConfig.
func ValidateLinkName(key, name string) error {
	if why := ifNameProblem(name); why != "" {
		return Errorf(ErrInvalidConfig, "%s %q: %s", key, name, why)
	}
	return nil
}

// ifNameProblem says what is wrong with an interface name, or returns "".
func ifNameProblem(name string) string {
	switch {
	case name == "":
		return "interface name is empty"
	case len(name) > MaxIfNameLen:
		return fmt.Sprintf("longer than %d bytes", MaxIfNameLen)
	case name == "." || name == "..":
		return "not a valid interface name"
	case strings.ContainsAny(name, "/:"):
		return "must not contain '/' or ':'"
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return "must not contain whitespace"
	}
	return ""
}
