package fuzz

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"cnisuite/test/fuzz/jsontree"
	"cnisuite/test/fuzz/mutate"
)

// Input is one fuzz case: a configuration and the environment every verb
// of it runs with. It depends only on (seed, plugin, index), so any one
// input can be rebuilt without the others.
type Input struct {
	Plugin    string
	Index     int
	Base      string
	Config    []byte
	Env       Env
	Mutations []string
}

// Env is the per-attachment part of the environment. GC and STATUS get
// none of it, as the spec says.
type Env struct {
	ContainerID string
	NetNS       string
	IfName      string
	Args        string
}

// Vars returns the environment of verb, without CNI_PATH.
func (e Env) Vars(verb string) []string {
	vars := []string{"CNI_COMMAND=" + verb}
	if verb == "GC" || verb == "STATUS" {
		return vars
	}
	return append(vars, "CNI_CONTAINERID="+e.ContainerID, "CNI_NETNS="+e.NetNS,
		"CNI_IFNAME="+e.IfName, "CNI_ARGS="+e.Args)
}

// Rand returns the random source of one input.
func Rand(seed uint64, plugin string, index int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(plugin))
	return rand.New(rand.NewPCG(seed, h.Sum64()^uint64(index)))
}

// NewInput builds input index of plugin: base variant index mod the number
// of variants; unmutated when mutated is false.
func NewInput(seed uint64, plugin string, index int, p Paths, mutated bool) Input {
	r := Rand(seed, plugin, index)
	bases := Bases[plugin]
	b := bases[index%len(bases)]
	tree := b.Tree(placeholders)
	in := Input{Plugin: plugin, Index: index, Base: b.Name, Env: baseEnv(plugin, index, p)}
	if !mutated {
		in.Config = ownNetwork(placePaths(jsontree.Marshal(tree), p), fmt.Sprint(index))
		return in
	}
	for range 50 {
		text, done, why := mutate.Mutate(r, tree)
		if why != "" {
			continue
		}
		in.Config, in.Mutations = text, done
		break
	}
	if in.Config == nil { // nothing safe came out: run the base
		in.Config = jsontree.Marshal(tree)
	}
	in.Config = ownNetwork(placePaths(in.Config, p), fmt.Sprint(index))
	if r.IntN(8) == 0 {
		in.Mutations = append(in.Mutations, mutateEnv(r, &in.Env, p))
	}
	return in
}

// placeholders are the paths inputs are mutated with: fixed, so that the
// random choices (a byte offset, a retry after an unsafe draw) do not
// depend on where a run's temporary directories are, and an input is the
// same in every run. placePaths puts the real ones in afterwards; a
// placeholder that a mutation damaged keeps PlaceholderRoot, which
// placePaths moves into the input's own directory (damage to the root's own
// name makes the input unsafe, and it is not run).
var placeholders = Paths{DataDir: mutate.PlaceholderRoot + "input/data", ResolvConf: mutate.PlaceholderRoot + "input/resolv.conf",
	NetNS: mutate.PlaceholderRoot + "netns"}

// placePaths replaces the placeholders in text by the paths of p, then
// what is left of PlaceholderRoot (damaged placeholders) by p.Root.
func placePaths(text []byte, p Paths) []byte {
	text = bytes.ReplaceAll(text, []byte(placeholders.DataDir), []byte(p.DataDir))
	text = bytes.ReplaceAll(text, []byte(placeholders.ResolvConf), []byte(p.ResolvConf))
	text = bytes.ReplaceAll(text, []byte(placeholders.NetNS), []byte(p.NetNS))
	if p.Root != "" {
		text = bytes.ReplaceAll(text, []byte(mutate.PlaceholderRoot), []byte(p.Root))
	}
	return text
}

// baseNetworks are the network names of the base configurations.
var baseNetworks = []string{"fzlo", "fznet", "fzl2", "fzhl", "fztun", "fzpm"}

// ownNetwork gives an input a network name of its own, the base's name
// and tag. Inputs of one plugin run four batches at a time and share the
// files of default state directories (records, tuning's /run/cni/tuning
// when a mutation drops dataDir): a GC keeping only its own attachment of
// a shared network would rightly remove another input's state while that
// input runs, and STATUS would look for another batch's rules in its own
// node.
func ownNetwork(text []byte, tag string) []byte {
	for _, n := range baseNetworks {
		text = bytes.ReplaceAll(text, []byte(`"`+n+`"`), []byte(fmt.Sprintf(`"%s-%s"`, n, tag)))
	}
	return text
}

// BaseInput is base configuration i of plugin unmutated, as batch (the
// batch's first input index) runs it: its network and container ID are
// the batch's own.
func BaseInput(seed uint64, plugin string, i int, p Paths, batch int) Input {
	in := NewInput(seed, plugin, i, p, false)
	tag := fmt.Sprintf("base%d-%07d", i, batch) // no ID a prefix of another
	in.Config = ownNetwork(placePaths(jsontree.Marshal(Bases[plugin][i].Tree(placeholders)), p), tag)
	in.Env.ContainerID = fmt.Sprintf("fuzz-%s-%s", plugin, tag)
	return in
}

// ContainerID names input index of plugin; leftovers are recognized by it,
// so no ID may be a prefix of another (fuzz-bridge-4 of fuzz-bridge-403):
// the index is zero-padded.
func ContainerID(plugin string, index int) string {
	return fmt.Sprintf("fuzz-%s-%07d", plugin, index)
}

// baseEnv is the environment a runtime gives input index: Kubernetes'
// CNI_ARGS, and the MAC or IP a plugin takes from there.
func baseEnv(plugin string, index int, p Paths) Env {
	id := ContainerID(plugin, index)
	args := "IgnoreUnknown=1;K8S_POD_NAMESPACE=fuzz;K8S_POD_NAME=p" + fmt.Sprint(index) +
		";K8S_POD_INFRA_CONTAINER_ID=" + id
	switch plugin {
	case "bridge", "tuning":
		args += ";MAC=0a:58:0a:4d:00:31"
	case "host-local":
		args += ";IP=10.33.0.60"
	}
	return Env{ContainerID: id, NetNS: p.NetNS, IfName: "eth0", Args: args}
}

var (
	oddIDs     = []string{"", "-dash", "a/b", "..", ".", "ü", "a b", "a\nb", "x;y", strings.Repeat("c", 300)}
	oddIfNames = []string{"", "lo", "eth1", "eth0.100", strings.Repeat("i", 15), strings.Repeat("i", 16),
		"é", "a/b", ".", "..", "eth 0", "IFNAME", NodeIfName, "a:b"}
	oddArgs = []string{"", "IgnoreUnknown=1", "X=1", "=", ";", ";;", "IP=10.33.0.70",
		"IP=garbage;IgnoreUnknown=1", "MAC=zz", "MAC=ff:ff:ff:ff:ff:ff", "IgnoreUnknown=true;A",
		"K8S_POD_NAME", "IgnoreUnknown=1;" + strings.Repeat("K=v;", 2000), "IP=10.33.0.50;IP=10.33.0.51"}
)

// mutateEnv changes one variable of the environment. CNI_NETNS only ever
// becomes empty, missing or a file that is no namespace: never another
// namespace, least of all the node's.
func mutateEnv(r *rand.Rand, e *Env, p Paths) string {
	switch r.IntN(4) {
	case 0:
		e.ContainerID = oddIDs[r.IntN(len(oddIDs))]
		return fmt.Sprintf("env: CNI_CONTAINERID=%q", e.ContainerID)
	case 1:
		e.IfName = oddIfNames[r.IntN(len(oddIfNames))]
		return fmt.Sprintf("env: CNI_IFNAME=%q", e.IfName)
	case 2:
		e.Args = oddArgs[r.IntN(len(oddArgs))]
		return fmt.Sprintf("env: CNI_ARGS=%q", shortString(e.Args))
	}
	e.NetNS = []string{"", p.NetNS + "-missing", p.ResolvConf}[r.IntN(3)]
	return fmt.Sprintf("env: CNI_NETNS=%q", e.NetNS)
}

// shortString cuts s after 60 bytes for a description.
func shortString(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%s… (%d bytes)", s[:60], len(s))
	}
	return s
}
