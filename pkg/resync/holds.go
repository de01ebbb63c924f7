package resync

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"cnisuite/pkg/records"
	"cnisuite/pkg/sysctlkeep"
)

// holdGrace spares the sysctl holds of ADDs at work: an ADD holds its
// keys before it writes its record (at its end), so a hold younger than
// this may be an attachment on its way. Five minutes is well past the
// longest an ADD takes (its lock waits are 30 s each).
const holdGrace = 5 * time.Minute

// PruneHolds releases the node's sysctl holds that no recorded attachment
// needs (sysctlkeep.Keeper.Prune): at once those of the attachments a GC
// of plugin's network dropped (their records are gone), and, once older
// than holdGrace, every other one without a record (a DEL killed after it
// removed its record). GC calls it with what it dropped, cnisuite resync
// with nothing; only for the node's records (store.Root ""), since other
// records say nothing of the node's holds.
func PruneHolds(store records.Store, plugin, network string, dropped []records.Attachment) error {
	if store.Root != "" {
		return nil
	}
	return pruneHolds(store, sysctlkeep.Keeper{}, time.Now().Add(-holdGrace), holders(plugin, network, dropped))
}

// holders names the sysctl holders of plugin's attachments.
func holders(plugin, network string, as []records.Attachment) map[string]bool {
	out := map[string]bool{}
	for _, a := range as {
		out[sysctlkeep.Holder(plugin, network, a.ContainerID, a.IfName)] = true
	}
	return out
}

func pruneHolds(store records.Store, k sysctlkeep.Keeper, before time.Time, gone map[string]bool) error {
	needed, err := neededHolders(store)
	if err != nil {
		return fmt.Errorf("sysctl holds kept: %w", err)
	}
	return k.Prune(func(h string, taken time.Time) bool {
		return !needed[h] && (gone[h] || taken.Before(before))
	})
}

// neededHolders returns the sysctl holders of every recorded attachment.
// A record that is not valid names no attachment (it is not ours, and no
// repair uses it); a record that cannot be read at all is an error, and
// nothing is released on that partial view.
func neededHolders(store records.Store) (map[string]bool, error) {
	needed := map[string]bool{}
	for _, plugin := range Plugins {
		nets, err := store.Networks(plugin)
		if err != nil {
			return nil, err
		}
		for _, n := range nets {
			files, err := store.Files(plugin, n)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				r, err := store.Read(plugin, n, f)
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, records.ErrInvalid) {
					continue
				}
				if err != nil {
					return nil, err
				}
				needed[sysctlkeep.Holder(plugin, n, r.ContainerID, r.IfName)] = true
			}
		}
	}
	return needed, nil
}
