package crinode

import (
	"embed"
	"strings"
)

//go:embed containerd/*.toml
var containerdConfigs embed.FS

// Configurations of containerd for a test node, every path on the node's
// own tmpfs, the CRI plugin on and the pause image pinned.
const (
	Containerd16  = "config-1.6.toml"  // containerd 1.6, version 2
	Containerd2V3 = "config-2-v3.toml" // containerd 2.x, version 3
	Containerd2V4 = "config-2-v4.toml" // containerd 2.x, version 4
)

// ContainerdConfig is one of the configurations with the CNI plugin
// directory binDir and the configuration directory confDir filled in.
func ContainerdConfig(name, binDir, confDir string) (string, error) {
	tmpl, err := containerdConfigs.ReadFile("containerd/" + name)
	if err != nil {
		return "", err
	}
	return strings.NewReplacer("@CNI_BIN_DIR@", binDir, "@CNI_CONF_DIR@", confDir).Replace(string(tmpl)), nil
}
