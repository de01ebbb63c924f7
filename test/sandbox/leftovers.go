package sandbox

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// StateFiles lists the files under dirs whose name is the address ip or
// names the container, or whose content names the container (a lease in
// the reference format holds the container ID).
func StateFiles(dirs []string, containerID, ip string) []string {
	var found []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil // a directory that vanished mid-walk holds nothing
			}
			name := d.Name()
			// Only plain files are read: a FIFO of a runtime would block.
			if name == ip || strings.Contains(name, containerID) || (d.Type().IsRegular() && fileMentions(p, containerID)) {
				found = append(found, "state file left: "+p)
			}
			return nil
		})
		if err != nil {
			found = append(found, "walking "+dir+": "+err.Error())
		}
	}
	return found
}

func fileMentions(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && bytes.Contains(data, []byte(s))
}

// RulesNaming lists the firewall rules that name the address ip or the
// container, in the dumps of nftables (which includes iptables-nft) and
// iptables-legacy that sh runs (a shell command line, in the node's
// namespaces) returns.
func RulesNaming(sh func(script string) (string, error), containerID, ip string) []string {
	addr := regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(ip) + `([^0-9]|$)`)
	var found []string
	dumps := []struct{ name, script string }{
		{"nft", "nft list ruleset"},
		{"iptables-legacy", "if command -v iptables-legacy-save >/dev/null; then iptables-legacy-save 2>/dev/null; fi"},
	}
	for _, d := range dumps {
		out, err := sh(d.script)
		if err != nil {
			found = append(found, err.Error())
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			if addr.MatchString(line) || strings.Contains(line, containerID) {
				found = append(found, d.name+" rule left: "+strings.TrimSpace(line))
			}
		}
	}
	return found
}

// Without returns found less the entries that hold one of allowed (paths
// a test knows to be left on purpose).
func Without(found []string, allowed ...string) []string {
	var left []string
	for _, f := range found {
		keep := true
		for _, a := range allowed {
			if strings.Contains(f, a) {
				keep = false
			}
		}
		if keep {
			left = append(left, f)
		}
	}
	return left
}
