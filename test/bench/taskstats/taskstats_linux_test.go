package taskstats

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
)

// stats is a struct taskstats of the kernel's version 16 size (560 bytes).
func stats(comm string, pid, tgid, ppid uint32, cpu, wait time.Duration, runs, minflt, rss uint64) []byte {
	s := make([]byte, 560)
	le := binary.LittleEndian
	le.PutUint16(s, 16)
	le.PutUint64(s[offRuns:], runs)
	le.PutUint64(s[offWait:], uint64(wait))
	le.PutUint64(s[offCPU:], uint64(cpu))
	copy(s[offComm:], comm)
	le.PutUint32(s[offPID:], pid)
	le.PutUint32(s[offPPID:], ppid)
	le.PutUint64(s[offMinflt:], minflt)
	le.PutUint64(s[offHiwater:], rss)
	le.PutUint32(s[offTGID:], tgid)
	return s
}

// exitMessage is the payload the kernel sends when a thread exits: its
// record, and for a process's last thread the process's aggregate too.
func exitMessage(t *testing.T, pid uint32, st []byte, tgidAggregate []byte) []byte {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(typeAggrPID, func(nae *netlink.AttributeEncoder) error {
		nae.Uint32(typePID, pid)
		nae.Bytes(typeStats, st)
		return nil
	})
	if tgidAggregate != nil {
		ae.Nested(5, func(nae *netlink.AttributeEncoder) error { // TASKSTATS_TYPE_AGGR_TGID
			nae.Uint32(2, pid)
			nae.Bytes(typeStats, tgidAggregate)
			return nil
		})
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseAndSum(t *testing.T) {
	const ms = time.Millisecond
	var threads []Thread
	for _, m := range [][]byte{
		exitMessage(t, 101, stats("bridge", 101, 100, 9, 1*ms, 2*ms, 3, 10, 6000), nil),
		// the process's aggregate carries no name: parse must take the thread's
		exitMessage(t, 100, stats("bridge", 100, 100, 9, 4*ms, 1*ms, 5, 200, 6400), make([]byte, 560)),
		exitMessage(t, 200, stats("bridge-veth-del", 200, 200, 1, 2*ms, 0, 7, 150, 5000), nil),
		exitMessage(t, 300, stats("bridge", 300, 300, 9, 3*ms, 0, 2, 190, 6300), nil),
		// Go's check of clone(CLONE_PIDFD): a fork of process 100 that exits
		exitMessage(t, 102, stats("bridge", 102, 102, 100, 1*ms, 0, 1, 0, 6400), nil),
	} {
		ts, err := parse(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 {
			t.Fatalf("parse gave %d records, want 1 (the aggregate is not a thread): %+v", len(ts), ts)
		}
		threads = append(threads, ts...)
	}
	procs := Processes(threads)
	if len(procs) != 3 {
		t.Fatalf("Processes = %+v, want 3 (the fork counted in its parent)", procs)
	}
	want := Process{Comm: "bridge", TGID: 100, PPID: 9, Threads: 2, PeakRSSKB: 6400, Usage: Usage{CPU: 6 * ms, Wait: 3 * ms, Runs: 9, MinorFault: 210}}
	if procs[0] != want {
		t.Errorf("process 100 = %+v, want %+v", procs[0], want)
	}
	cmds := ByCommand(procs)
	if len(cmds) != 2 || cmds[0].Comm != "bridge" || cmds[0].Processes != 2 || cmds[0].CPU != 9*ms || cmds[1].Comm != "bridge-veth-del" || cmds[1].Runs != 7 {
		t.Errorf("ByCommand = %+v, want bridge (2 processes, 8 ms) then bridge-veth-del", cmds)
	}
}

func TestParseRefusesShortRecords(t *testing.T) {
	if _, err := parse(exitMessage(t, 1, make([]byte, 328), nil)); err == nil {
		t.Error("parse accepted a record without ac_tgid (version 11)")
	}
}
