package iptables

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/firewall/iptables/natchain"
	"cnisuite/pkg/netfilter"
	"cnisuite/pkg/statedir"
)

// With iptables-nft, the jumps into an owner's chains are rules of the
// built-in chains PREROUTING, OUTPUT and POSTROUTING, which hold one or
// more jumps per attachment of the node: finding ours by their comment
// means dumping those chains, a read that grows with the node (800 rules
// at 200 pods, each with its 256-byte comment; the reference's
// `iptables -D` dumps them too). So Ensure learns the handles of the jumps
// it writes (the kernel echoes each new rule back) and keeps them in a
// file of the owner, and Remove deletes them by handle after reading each
// one back by its handle: it must still be a jump into one of the owner's
// chains carrying the owner's tag. Without a file, or with one that no
// longer tells the truth (rules written by iptables-restore or by an
// earlier version, a file of another network namespace, a node rebooted
// since: /run is emptied then, as the rules are), Remove dumps the
// built-in chains as before. A jump the file does not know makes the
// kernel refuse to delete a chain still in use, and Remove tries again
// with the dump.

// jumpsRoot and jumpsDir hold the files, one directory per network
// namespace, reached without following links (pkg/statedir).
const (
	jumpsRoot = "/run/cnisuite"
	jumpsDir  = "iptables-jumps"
)

// jump is one rule of a built-in chain that jumps into an owner chain.
type jump struct {
	parent string
	handle uint64
}

// jumpsFile is the file of an owner's jumps in one family, under the
// network namespace of the calling thread.
// Equivalent to: /run/cnisuite/iptables-jumps/<netns inode>/<4|6>-<owner hash>
type jumpsFile struct{ netns, name string }

func jumpsFileFor(f family, o fwapi.Owner) (jumpsFile, error) {
	return jumpsFileOf(f, o.NetHash()[:6]+o.Hash()[:14])
}

// jumpsFileOf names the file of the owner whose chains end in key (the
// part of an owner chain's name after its prefix).
func jumpsFileOf(f family, key string) (jumpsFile, error) {
	fi, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return jumpsFile{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return jumpsFile{}, errors.New("no inode for the network namespace")
	}
	digit := "6"
	if f.v4 {
		digit = "4"
	}
	return jumpsFile{netns: strconv.FormatUint(st.Ino, 10), name: digit + "-" + key}, nil
}

// dir opens the file's directory, creating it when create is set.
func (j jumpsFile) dir(create bool) (*statedir.Dir, error) {
	root, err := statedir.OpenRoot(jumpsRoot, create, 0o755)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	all, err := root.Sub(jumpsDir, create, 0o700)
	if err != nil {
		return nil, err
	}
	defer all.Close()
	return all.Sub(j.netns, create, 0o700)
}

// remove removes the file, if any, and the temporary file of a save
// killed before its rename.
func (j jumpsFile) remove() {
	d, err := j.dir(false)
	if err != nil {
		return
	}
	defer d.Close()
	_ = d.Remove(j.name) // a record left costs the next Remove a dump
	_ = d.Remove(j.tmp())
}

// tmp names the file a save writes before renaming it to the record.
func (j jumpsFile) tmp() string { return j.name + ".tmp" }

// forgetChainJumps removes the file of the owner of an owner chain, which
// GC deleted by name.
func forgetChainJumps(f family, chain string) {
	for _, p := range []string{natchain.PrefixMasq, natchain.PrefixDNAT, natchain.PrefixHairpin} {
		if key, ok := strings.CutPrefix(chain, p); ok {
			if j, err := jumpsFileOf(f, key); err == nil {
				j.remove()
			}
		}
	}
}

// saveJumps records the jumps of an owner's chains; none removes the file.
// Failing to record costs the next Remove a dump, nothing else.
func saveJumps(f family, o fwapi.Owner, jumps []jump) {
	j, err := jumpsFileFor(f, o)
	if err != nil {
		return
	}
	if len(jumps) == 0 {
		j.remove()
		return
	}
	var b strings.Builder
	for _, jp := range jumps {
		fmt.Fprintf(&b, "%s %d\n", jp.parent, jp.handle)
	}
	d, err := j.dir(true)
	if err != nil {
		return
	}
	defer d.Close()
	tmp := j.tmp()
	if d.Overwrite(tmp, []byte(b.String())) != nil || d.Rename(tmp, j.name, 0) != nil {
		_ = d.Remove(tmp)
		_ = d.Remove(j.name) // an old file would now lie
	}
}

// forgetJumps removes the file of an owner's jumps.
func forgetJumps(f family, o fwapi.Owner) { saveJumps(f, o, nil) }

// loadJumps reads the file of an owner's jumps; false without one.
func loadJumps(f family, o fwapi.Owner) ([]jump, bool) {
	j, err := jumpsFileFor(f, o)
	if err != nil {
		return nil, false
	}
	d, err := j.dir(false)
	if err != nil {
		return nil, false
	}
	defer d.Close()
	data, err := d.ReadFile(j.name)
	if err != nil {
		return nil, false
	}
	var out []jump
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		parent, h, ok := strings.Cut(line, " ")
		handle, err := strconv.ParseUint(h, 10, 64)
		if !ok || err != nil || !natchain.IsParent(parent) {
			return nil, false
		}
		out = append(out, jump{parent: parent, handle: handle})
	}
	return out, len(out) > 0
}

// knownJumps returns the owner's jumps as its file records them, each read
// back by handle and found to be a jump into one of the present chains
// with the owner's tag; false when there is no file or one of them is not.
func knownJumps(conn *netfilter.Conn, f family, o fwapi.Owner, present map[string]bool) ([]jump, bool, error) {
	jumps, ok := loadJumps(f, o)
	if !ok {
		return nil, false, nil
	}
	tag := natchain.EntryTag(o)
	for _, j := range jumps {
		r, found, err := conn.RuleByHandle(f.proto(), "nat", j.parent, j.handle)
		if err != nil {
			return nil, false, err
		}
		if !found || !present[r.Jump] || r.Comment != tag {
			return nil, false, nil
		}
	}
	return jumps, true, nil
}

// echoedJumps picks, among the rules the kernel echoed, the jumps into the
// given chains.
func echoedJumps(echoed []netfilter.Rule, chains map[string]bool) []jump {
	var out []jump
	for _, r := range echoed {
		if natchain.IsParent(r.Chain) && chains[r.Jump] {
			out = append(out, jump{parent: r.Chain, handle: r.Handle})
		}
	}
	return out
}
