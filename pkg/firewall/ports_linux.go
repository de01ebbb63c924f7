package firewall

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"

	"cnisuite/pkg/statedir"
	"cnisuite/pkg/types"
)

// Host ports of the automatic choice, claimed so that one stays
// single-owner across the two backends (each backend keeps its own rules
// only: nftables refuses a second owner, iptables lets the first rule
// win). Under the network namespace's directory of the records:
//
//	ports/<protocol>-<host port>/<backend>-<holder>   the host address, "" for any
//
// An ADD writes its claims, then reads the port's other claims: one of the
// other backend whose address overlaps fails the ADD (code 11, as a port
// held on nftables does). Writing before reading means two racing ADDs on
// different backends cannot both pass. The claimed ports are also written
// into the attachment's holder file, so that DEL and GC find its claims.
const portsDir = "ports"

// claimPorts claims o's host ports on kind and records them in o's
// holder file.
func (r records) claimPorts(o Owner, kind string, ms []PortMapping) error {
	if r.root == "" {
		return nil
	}
	nsDir, err := r.nsDir(true)
	if err != nil {
		return recordErr(o.Network, err)
	}
	defer nsDir.Close()
	ports, err := nsDir.Sub(portsDir, true, 0o700)
	if err != nil {
		return recordErr(o.Network, err)
	}
	defer ports.Close()
	// A repeated ADD with fewer mappings lets go of the others first.
	if err := r.unclaimOwner(o); err != nil {
		return err
	}
	var keys []string
	for _, m := range ms {
		key := fmt.Sprintf("%s-%d", strings.ToLower(m.Protocol), m.HostPort)
		keys = append(keys, key)
		err := claimPort(ports, key, kind+"-"+holderName(o), m.HostIP)
		if err != nil {
			return errors.Join(err, unclaim(ports, keys, holderName(o)))
		}
	}
	return recordErr(o.Network, r.writeHolder(o, strings.Join(keys, "\n")))
}

// claimPort writes one claim, then fails with ErrConflict when a claim of
// the other backend overlaps it.
func claimPort(ports *statedir.Dir, key, name string, ip net.IP) error {
	d, err := ports.Sub(key, true, 0o700)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Overwrite(name, []byte(ipText(ip))); err != nil {
		return err
	}
	entries, err := d.List()
	if err != nil {
		return err
	}
	other := otherKind(strings.SplitN(name, "-", 2)[0]) + "-"
	for _, e := range entries {
		if !strings.HasPrefix(e.Name, other) {
			continue
		}
		held, err := d.ReadFile(e.Name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return err
		}
		if overlap(net.ParseIP(string(held)), ip) {
			return types.Errorf(ErrConflict, "host port %s on %s: held by an attachment on the %s backend",
				key, hostText(ip), strings.TrimSuffix(other, "-"))
		}
	}
	return nil
}

// unclaimOwner removes o's claims, as its holder file lists them.
func (r records) unclaimOwner(o Owner) error {
	if r.root == "" {
		return nil
	}
	d, err := r.dir(o.Network, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return recordErr(o.Network, err)
	}
	defer d.Close()
	return recordErr(o.Network, r.unclaimHolder(d, holderName(o)))
}

// unclaimHolder removes the claims the holder file holder of the
// network's directory d lists.
func (r records) unclaimHolder(d *statedir.Dir, holder string) error {
	b, err := d.ReadFile(holder)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(b) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	nsDir, err := r.nsDir(false)
	if err != nil {
		return err
	}
	defer nsDir.Close()
	ports, err := nsDir.Sub(portsDir, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer ports.Close()
	return unclaim(ports, strings.Fields(string(b)), holder)
}

// unclaim removes holder's claims of keys on either backend.
func unclaim(ports *statedir.Dir, keys []string, holder string) error {
	var errs []error
	for _, key := range keys {
		d, err := ports.Sub(key, false, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, d.Remove(KindIPTables+"-"+holder), d.Remove(KindNFTables+"-"+holder), d.Close())
	}
	return errors.Join(errs...)
}

// overlap reports whether two host addresses of mappings of one port can
// catch the same packet: nil is every address, an unspecified one every
// address of its family.
func overlap(a, b net.IP) bool {
	if a == nil || b == nil {
		return true
	}
	if (a.To4() == nil) != (b.To4() == nil) {
		return false
	}
	return a.IsUnspecified() || b.IsUnspecified() || a.Equal(b)
}

func ipText(ip net.IP) string {
	if ip == nil {
		return ""
	}
	return ip.String()
}

func hostText(ip net.IP) string {
	if ip == nil {
		return "every address"
	}
	return ip.String()
}
