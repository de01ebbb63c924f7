// Package watch runs the repair of pkg/resync by itself when other
// software takes our rules or sysctls away (cnisuite watch).
//
// It waits on the kernel and on firewalld, and costs nothing while
// nothing happens:
//
//   - nftables change events (nfnetlink group NFNLGRP_NFTABLES): the
//     deletion of a table, chain, rule, set or set element of ours — our
//     cnisuite_* tables, or in iptables-nft's nat table our CNIS- chains
//     and the base chains holding our jumps. nft flush ruleset, firewalld,
//     iptables-nft and iptables-restore on an iptables-nft node all send
//     them;
//   - rtnetlink netconf events (RTNLGRP_IPV4_NETCONF, _IPV6_): forwarding
//     of "all" changed, as `sysctl --system` does;
//   - firewalld's D-Bus signal Reloaded, where firewalld runs (an
//     iptables-legacy node sends no nftables events);
//   - a safety net once a minute (SafetyInterval), for what sends no event
//     (iptables-legacy, route_localnet).
//
// Events are coalesced: the repair runs once no event came for Settle
// (a flush sends one event per object, a reset script runs several
// commands), and at the latest maxSettle after the first, so it starts
// within a second of our objects disappearing. The repair itself installs only
// what is missing, so an event caused by a pod's own DEL, or by the
// repair's writes, costs one check and changes nothing.
package watch

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultSafetyInterval = time.Minute
	DefaultSettle         = 250 * time.Millisecond
	// maxSettle bounds the wait for a quiet moment.
	maxSettle = 700 * time.Millisecond
)

// Options of Run.
type Options struct {
	// Repair puts back what is missing; it is never run twice at once.
	Repair func(ctx context.Context, reason string)
	// SafetyInterval is the time between repairs without events
	// (DefaultSafetyInterval when zero). cnisuite watch keeps the default
	// but in tests (CNISUITE_WATCH_SAFETY_INTERVAL).
	SafetyInterval time.Duration
	// Settle is the quiet time after an event that ends its burst.
	Settle time.Duration
	// Log receives one line per source that could not be watched.
	Log io.Writer
	// Ready, when set, is called once every source listens (or failed),
	// with the names of those that listen.
	Ready func(sources []string)
}

// source is one kind of event: it calls ready once it listens, then
// notify for each relevant event until ctx ends, and returns an error when
// it cannot watch.
type source struct {
	name string
	run  func(ctx context.Context, ready func(), notify func(reason string)) error
}

// Run repairs once at start, then on every event and at the safety
// interval, until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.SafetyInterval <= 0 {
		o.SafetyInterval = DefaultSafetyInterval
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	events := make(chan string, 1)
	notify := func(reason string) {
		select {
		case events <- reason:
		default: // a repair is due already
		}
	}
	listening := start(ctx, o, notify)
	// Repairs start once every source listens: nothing taken from now on
	// goes unseen.
	o.Repair(ctx, "start")
	if o.Ready != nil {
		o.Ready(listening)
	}
	tick := time.NewTicker(o.SafetyInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			o.Repair(ctx, "safety net")
		case reason := <-events:
			settle(ctx, events, o.Settle)
			o.Repair(ctx, reason)
		}
	}
}

// start starts every source and returns, once each listens or failed,
// the names of those that listen.
func start(ctx context.Context, o Options, notify func(string)) []string {
	all := sources()
	up := make(chan string, len(all))
	for _, s := range all {
		go func() {
			var once sync.Once
			ready := func() { once.Do(func() { up <- s.name }) }
			err := s.run(ctx, ready, notify)
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(o.Log, "watch: %s: %v (the safety net every %s still repairs)\n", s.name, err, o.SafetyInterval)
			}
			once.Do(func() { up <- "" })
		}()
	}
	var names []string
	for range all {
		if n := <-up; n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// settle waits until no event came for quiet, or maxSettle passed,
// dropping the events of the burst.
func settle(ctx context.Context, events <-chan string, quiet time.Duration) {
	limit := time.NewTimer(maxSettle)
	defer limit.Stop()
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-limit.C:
			return
		case <-t.C:
			return
		case <-events:
			t.Reset(quiet)
		}
	}
}
