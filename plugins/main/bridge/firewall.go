package main

import (
	"cnisuite/pkg/firewall"
)

// The bridge's names for pkg/firewall's types.
type (
	fwOwner      = firewall.Owner
	fwMasq       = firewall.Masq
	fwSpoofCheck = firewall.SpoofCheck
	fwRules      = firewall.Rules
	fwBackend    = firewall.Backend
)

const pluginBridge = firewall.PluginBridge
