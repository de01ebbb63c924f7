package types

import (
	"bytes"
	"encoding/json"
)

// NetConf holds the keys every plugin configuration shares. Plugins embed it
// in their own configuration struct.
type NetConf struct {
	CNIVersion    string          `json:"cniVersion,omitempty"`
	Name          string          `json:"name,omitempty"`
	Type          string          `json:"type,omitempty"`
	Capabilities  map[string]bool `json:"capabilities,omitempty"`
	IPAM          IPAM            `json:"ipam,omitempty"`
	DNS           DNS             `json:"dns,omitempty"`
	RawPrevResult json.RawMessage `json:"prevResult,omitempty"`

	// ValidAttachments is the GC key of the current specification text.
	ValidAttachments []Attachment `json:"cni.dev/valid-attachments,omitempty"`
	// LegacyAttachments is the GC key of the spec-v1.1.0 tag; libcni sends both.
	LegacyAttachments []Attachment `json:"cni.dev/attachments,omitempty"`
}

// IPAM names the IPAM plugin a main plugin delegates to.
type IPAM struct {
	Type string `json:"type,omitempty"`
}

// Attachment identifies one container interface on a network, as listed in
// the configuration of a GC call.
type Attachment struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
}

// Decode decodes a network configuration into v. A failure wraps
// ErrDecoding and names the JSON path at fault; a null where a list element
// or map value must be an object is a failure too.
func Decode(data []byte, v any) error {
	if err := decodeJSON(data, v, ""); err != nil {
		return Errorf(ErrDecoding, "decoding network configuration: %w", err)
	}
	return nil
}

// PrevResult decodes prevResult at whatever version it was written in; a
// prevResult without cniVersion is read at the configuration's version. It
// returns nil and no error when there is no prevResult.
func (c *NetConf) PrevResult() (*Result, error) {
	raw := bytes.TrimSpace(c.RawPrevResult)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	version := c.CNIVersion
	if version == "" {
		version = "0.1.0"
	}
	return decodeResult(raw, version, "prevResult")
}

// GCAttachments returns the valid attachments of a GC call, read from both
// spellings of the key, without duplicates.
func (c *NetConf) GCAttachments() []Attachment {
	seen := map[Attachment]bool{}
	var out []Attachment
	for _, list := range [][]Attachment{c.ValidAttachments, c.LegacyAttachments} {
		for _, a := range list {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// RequirePrevResult returns the prevResult that plugin needs for verb. A
// configuration without one is invalid (code 7), in the same words for
// every plugin.
func (c *NetConf) RequirePrevResult(plugin, verb string) (*Result, error) {
	r, err := c.PrevResult()
	if err != nil || r != nil {
		return r, err
	}
	return nil, Errorf(ErrInvalidConfig,
		"prevResult: required prevResult missing: %s %s needs the result of the plugins before it in the chain, which the runtime passes as prevResult",
		plugin, verb)
}
