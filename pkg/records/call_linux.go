package records

import (
	"encoding/json"
	"io"

	"cnisuite/pkg/skel"
	"cnisuite/pkg/types"
)

// WriteCall records the attachment of an ADD: the call's input as the
// plugin got it and result (when it is not in the input already). No
// program: cnisuite resync finds the plugin by the configuration's type
// (pkg/resync). A failure is an I/O error (CNI code 5): ADD fails rather
// than leave an attachment no repair knows.
func (s Store) WriteCall(plugin, network string, a *skel.CmdArgs, result json.RawMessage) error {
	err := s.Write(Record{
		Plugin: plugin, Network: network, ContainerID: a.ContainerID, IfName: a.IfName,
		Netns: a.Netns, Args: a.Args, Config: a.StdinData, Result: result,
	})
	if err != nil {
		return types.Errorf(types.ErrIO, "%w", err)
	}
	return nil
}

// CmdArgs returns the arguments of the ADD that wrote r, as a repair
// runs the plugin's own functions on them. Its stderr is discarded: a
// repair reports through its outcome.
func (r Record) CmdArgs() *skel.CmdArgs {
	return &skel.CmdArgs{ContainerID: r.ContainerID, IfName: r.IfName, Netns: r.Netns, Args: r.Args,
		StdinData: r.Config, Stderr: io.Discard}
}
