package firewall

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"cnisuite/pkg/firewall/fwapi"
	"cnisuite/pkg/rootless"
	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// Host ports have one owner on the node, whichever backend writes them
// and whether they are single ports or ranges: before its rules are
// written, a portmap attachment claims its host ports in the store of the
// network namespace the rules live in, under the records' root:
//
//	fw-backend/<netns>/hostports/.lock
//	fw-backend/<netns>/hostports/<proto>-<port/256>/<first>-<last>_<host>_<holder>   "portmap/<network>/<id>/<if>"
//	fw-backend/<netns>/hostports/owners/<network hash>/<holder>                       the claim files, one a line
//
// <host> is "*" for a mapping without hostIP (every address of both
// families), else the address ("0.0.0.0": every IPv4 address). A claim
// lies in every bucket (256 ports of a protocol) its ports touch, so an ADD
// reads the names of the buckets its own ports touch and nothing else: the
// cost follows the ports asked for, not the pods on the node. The check and
// the writes run under the store's lock, so two ADDs cannot both take a
// port. A claim of the same holder (the attachment: network, container ID,
// interface) is never a conflict; a repeated ADD replaces its claims. DEL
// lets go of them through the owners file, GC of the network's holders it
// does not keep.
const (
	claimsDir   = "hostports"
	claimsLock  = ".lock"
	ownersDir   = "owners"
	bucketShift = 8
)

// claimStore is the store under root; off (root "") in a rootless
// runtime's user namespace, where /run is the real root's.
type claimStore struct{ root string }

// nodeClaims returns the store under RecordRoot, off when the process is
// not root of the node.
func nodeClaims() claimStore {
	if !rootless.NodeRoot() {
		return claimStore{}
	}
	return claimStore{root: RecordRoot}
}

func (s claimStore) on() bool { return s.root != "" }

// claim is the host ports of a mapping: first to last of proto on host.
type claim struct {
	proto       string
	first, last int
	host        string // "*" or an address
}

// claimsOf returns the claims of the mappings, each once, for the
// families the rules are written for: a mapping without hostIP claims
// every address of the families with a container address ("*" for both),
// one whose hostIP is of a family without one claims nothing (it gets no
// rule).
func claimsOf(p *PortMaps) []claim {
	every := map[[2]bool]string{{true, true}: "*", {true, false}: "0.0.0.0", {false, true}: "::"}
	v4, v6 := p.ContainerV4 != nil, p.ContainerV6 != nil
	var out []claim
	seen := map[claim]bool{}
	for _, m := range p.Mappings {
		c := claim{proto: strings.ToLower(m.Protocol), first: m.HostPort, last: m.HostLast(), host: every[[2]bool{v4, v6}]}
		if m.HostIP != nil {
			c.host = m.HostIP.String()
			if (m.HostIP.To4() != nil && !v4) || (m.HostIP.To4() == nil && !v6) {
				c.host = ""
			}
		}
		if c.host != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func (c claim) name(holder string) string {
	return fmt.Sprintf("%d-%d_%s_%s", c.first, c.last, c.host, holder)
}

// parseClaim reads a claim file's name in a bucket of proto.
func parseClaim(proto, name string) (c claim, holder string, ok bool) {
	parts := strings.Split(name, "_")
	if len(parts) != 3 {
		return c, "", false
	}
	first, last, _ := strings.Cut(parts[0], "-")
	var err1, err2 error
	c.first, err1 = strconv.Atoi(first)
	c.last, err2 = strconv.Atoi(last)
	c.proto, c.host = proto, parts[1]
	return c, parts[2], err1 == nil && err2 == nil
}

// buckets names the bucket directories the claim's ports touch.
func (c claim) buckets() []string {
	var out []string
	for b := c.first >> bucketShift; b <= c.last>>bucketShift; b++ {
		out = append(out, c.proto+"-"+strconv.Itoa(b))
	}
	return out
}

// overlaps reports whether a packet can match both claims: the same
// protocol, a common port and host addresses that meet ("*" meets every
// address, an unspecified one every address of its family).
func (c claim) overlaps(o claim) bool {
	if c.proto != o.proto || c.first > o.last || o.first > c.last {
		return false
	}
	if c.host == "*" || o.host == "*" {
		return true
	}
	a, b := net.ParseIP(c.host), net.ParseIP(o.host)
	if a == nil || b == nil || (a.To4() == nil) != (b.To4() == nil) {
		return false
	}
	return a.IsUnspecified() || b.IsUnspecified() || a.Equal(b)
}

// String writes "tcp 8000-8100 on every address" or "udp 53 on 10.0.0.1".
func (c claim) String() string {
	ports := strconv.Itoa(c.first)
	if c.last > c.first {
		ports += "-" + strconv.Itoa(c.last)
	}
	host := "every address"
	if c.host != "*" {
		host = c.host
	}
	return c.proto + " " + ports + " on " + host
}

func holderOf(o Owner) string { return o.Hash()[:32] }

func netOf(o Owner) string { return o.NetHash()[:32] }

// take claims want for o, replacing o's earlier claims; one another
// holder has fails with ErrConflict, naming both and nothing changed.
// fresh reports that o held no claim before.
func (s claimStore) take(ctx context.Context, o Owner, want []claim) (fresh bool, err error) {
	holder := holderOf(o)
	err = s.locked(ctx, true, func(d *statedir.Dir) error {
		if err := findConflict(d, want, holder); err != nil {
			return err
		}
		owners, err := d.Sub(ownersDir, true, 0o700)
		if err != nil {
			return err
		}
		defer owners.Close()
		nd, err := owners.Sub(netOf(o), true, 0o700)
		if err != nil {
			return err
		}
		defer nd.Close()
		old, err := readLines(nd, holder)
		if err != nil {
			return err
		}
		fresh = len(old) == 0
		return replaceClaims(d, nd, o, want, old)
	})
	return fresh, err
}

// replaceClaims writes o's claims want and removes its old ones: the
// owners file first lists both, so a crash in between leaves nothing it
// does not name.
func replaceClaims(d, nd *statedir.Dir, o Owner, want []claim, old []string) error {
	holder, content := holderOf(o), []byte(o.String())
	var files []string
	for _, c := range want {
		for _, b := range c.buckets() {
			files = append(files, b+"/"+c.name(holder))
		}
	}
	if err := nd.Overwrite(holder, []byte(strings.Join(append(files, old...), "\n"))); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, f := range files {
		keep[f] = true
		bucket, name, _ := strings.Cut(f, "/")
		b, err := d.Sub(bucket, true, 0o700)
		if err != nil {
			return err
		}
		err = b.Overwrite(name, content)
		b.Close()
		if err != nil {
			return err
		}
	}
	var stale []string
	for _, f := range old {
		if !keep[f] {
			stale = append(stale, f)
		}
	}
	if len(old) == 0 { // the list written first is already files
		return nil
	}
	if err := removeClaims(d, stale); err != nil {
		return err
	}
	return nd.Overwrite(holder, []byte(strings.Join(files, "\n")))
}

// findConflict fails with ErrConflict when a claim of another holder in
// the buckets want touches overlaps one of want.
func findConflict(d *statedir.Dir, want []claim, holder string) error {
	listed := map[string][]statedir.Entry{}
	for _, c := range want {
		for _, bucket := range c.buckets() {
			entries, done := listed[bucket]
			if !done {
				var err error
				if entries, err = listBucket(d, bucket); err != nil {
					return err
				}
				listed[bucket] = entries
			}
			for _, e := range entries {
				held, h, ok := parseClaim(c.proto, e.Name)
				if ok && h != holder && held.overlaps(c) {
					who, _ := readClaim(d, bucket, e.Name)
					return types.Errorf(ErrConflict, "host ports %s: overlap %s, held by %s", c, held, who)
				}
			}
		}
	}
	return nil
}

func listBucket(d *statedir.Dir, bucket string) ([]statedir.Entry, error) {
	b, err := d.Sub(bucket, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.List()
}

// readClaim returns the holder a claim file names.
func readClaim(d *statedir.Dir, bucket, name string) (string, error) {
	b, err := d.Sub(bucket, false, 0)
	if err != nil {
		return "another attachment", err
	}
	defer b.Close()
	content, err := b.ReadFile(name)
	if err != nil || len(content) == 0 {
		return "another attachment", err
	}
	return "attachment " + string(content), nil
}

// readLines returns the lines of name in d; none when it is missing.
func readLines(d *statedir.Dir, name string) ([]string, error) {
	b, err := d.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return strings.Fields(string(b)), err
}

// removeClaims removes claim files ("<bucket>/<name>"); missing ones are
// fine.
func removeClaims(d *statedir.Dir, files []string) error {
	var errs []error
	for _, f := range files {
		bucket, name, _ := strings.Cut(f, "/")
		b, err := d.Sub(bucket, false, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, b.Remove(name), b.Close())
	}
	return errors.Join(errs...)
}

// release lets go of o's claims: one owners file read, whatever the
// number of holders.
func (s claimStore) release(ctx context.Context, o Owner) error {
	holder := holderOf(o)
	return s.inNetwork(ctx, netOf(o), func(d, nd *statedir.Dir) error {
		return dropHolder(d, nd, holder)
	})
}

// prune lets go of the claims of portmap's attachments on network that
// keep (owners with ContainerID and IfName) lacks.
func (s claimStore) prune(ctx context.Context, network string, keep []Owner) error {
	kept := map[string]bool{}
	for _, k := range keep {
		kept[holderOf(Owner{Plugin: PluginPortmap, Network: network, ContainerID: k.ContainerID, IfName: k.IfName})] = true
	}
	return s.inNetwork(ctx, netOf(Owner{Plugin: PluginPortmap, Network: network}), func(d, nd *statedir.Dir) error {
		entries, err := nd.List()
		errs := []error{err}
		for _, e := range entries {
			if !kept[e.Name] {
				errs = append(errs, dropHolder(d, nd, e.Name))
			}
		}
		return errors.Join(errs...)
	})
}

// dropHolder removes the claims the owners file holder of the network's
// directory nd lists, then the file.
func dropHolder(d, nd *statedir.Dir, holder string) error {
	files, err := readLines(nd, holder)
	if err != nil {
		return err
	}
	if err := removeClaims(d, files); err != nil {
		return err
	}
	return nd.Remove(holder)
}

// inNetwork runs fn with the store's lock held on the store d and the
// owners directory nd of the network whose hash is netHash; nd goes when
// fn left it empty. Nothing to do without them.
func (s claimStore) inNetwork(ctx context.Context, netHash string, fn func(d, nd *statedir.Dir) error) error {
	return s.locked(ctx, false, func(d *statedir.Dir) error {
		owners, err := d.Sub(ownersDir, false, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer owners.Close()
		nd, err := owners.Sub(netHash, false, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		errs := []error{fn(d, nd), nd.Close()}
		if rerr := owners.RemoveDir(netHash); !errors.Is(rerr, unix.ENOTEMPTY) {
			errs = append(errs, rerr)
		}
		return errors.Join(errs...)
	})
}

// locked runs fn on the store of the calling thread's network namespace
// with its lock held; without create, a missing store means nothing to do.
func (s claimStore) locked(ctx context.Context, create bool, fn func(d *statedir.Dir) error) error {
	if !s.on() {
		return nil
	}
	err := func() error {
		nsDir, err := records(s).nsDir(create)
		if !create && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		d, err := nsDir.Sub(claimsDir, create, 0o700)
		nsDir.Close()
		if !create && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer d.Close()
		lock, err := d.Lock(ctx, claimsLock, recordWait)
		if err != nil {
			return err
		}
		defer lock.Close()
		return fn(d)
	}()
	if err != nil && types.Code(err) == types.CodeInternal {
		return types.Errorf(types.ErrIO, "host port claims: %w", err)
	}
	return err
}

// claimed is a backend whose portmap attachments claim their host ports
// in the node's store before their rules are written (and, on nftables,
// instead of reading the maps for overlaps the kernel does not refuse:
// fwapi.WithPortsClaimed).
type claimed struct {
	Backend
	store claimStore
}

// Ensure claims r's host ports, then writes the rules; a first ADD whose
// rules fail lets go of its claims.
func (c *claimed) Ensure(ctx context.Context, o Owner, r Rules) error {
	if r.PortMaps == nil || len(r.PortMaps.Mappings) == 0 || !c.store.on() {
		return c.Backend.Ensure(ctx, o, r)
	}
	fresh, err := c.store.take(ctx, o, claimsOf(r.PortMaps))
	if err != nil {
		return err
	}
	err = c.Backend.Ensure(fwapi.WithPortsClaimed(ctx), o, r)
	if err != nil && fresh {
		err = errors.Join(err, c.store.release(ctx, o))
	}
	return err
}

// Remove removes o's rules, then its claims.
func (c *claimed) Remove(ctx context.Context, o Owner) error {
	if err := c.Backend.Remove(ctx, o); err != nil || o.Plugin != PluginPortmap {
		return err
	}
	return c.store.release(ctx, o)
}

// GC collects the rules, then the claims of the attachments gone.
func (c *claimed) GC(ctx context.Context, plugin, network string, keep []Owner) error {
	if err := c.Backend.GC(ctx, plugin, network, keep); err != nil || plugin != PluginPortmap {
		return err
	}
	return c.store.prune(ctx, network, keep)
}

// Mapped reads o's host ports from the backend.
func (c *claimed) Mapped(ctx context.Context, o Owner) ([]PortMapping, error) {
	if mr, ok := c.Backend.(MappingReader); ok {
		return mr.Mapped(ctx, o)
	}
	return nil, nil
}
