package crinode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Build is a program set scripts/install-runtimes.sh built into its cache
// ($CNISUITE_RUNTIMES, else /var/cache/cnisuite/runtimes), at the version
// scripts/runtime-versions.env pins.
type Build struct {
	Name, Version string
	Bin           string // the directory of its programs
}

// FindBuild returns the build of name whose version the key of
// scripts/runtime-versions.env (in root, the module's checkout) pins, and
// the paths of those of programs missing from it.
func FindBuild(root, name, key string, programs ...string) (Build, []string, error) {
	version, err := PinnedVersion(filepath.Join(root, "scripts", "runtime-versions.env"), key)
	if err != nil {
		return Build{}, nil, err
	}
	cache := os.Getenv("CNISUITE_RUNTIMES")
	if cache == "" {
		cache = "/var/cache/cnisuite/runtimes"
	}
	b := Build{Name: name, Version: version, Bin: filepath.Join(cache, name+"-"+version, "bin")}
	var missing []string
	for _, p := range programs {
		if _, err := os.Stat(filepath.Join(b.Bin, p)); err != nil {
			missing = append(missing, filepath.Join(b.Bin, p))
		}
	}
	return b, missing, nil
}

// PinnedVersion reads KEY=value from a shell variables file.
func PinnedVersion(file, key string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("runtime versions: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("runtime versions: no %s in %s", key, file)
}
