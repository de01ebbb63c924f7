// Package taskstats reads the kernel's exit accounting (the TASKSTATS
// generic netlink family): for every thread that exits, its command name,
// its process, its CPU time, how many times it was put on a CPU and how
// long it waited in a run queue. cnibench sums the threads by process and
// the processes by command name to split a burst's CPU between cnitool,
// each plugin and each helper — helpers that outlive the plugin that
// started them included.
//
// The kernel sends these records only to sockets of the initial network
// namespace, and cnibench runs in a namespace of its own; so Exec, run
// before the sandbox, opens and registers the socket and hands it down to
// the command it runs as a descriptor (-taskstats-fd), and Listen reads it
// inside. Nothing is written to the node: the socket only listens.
//
// What the records leave out: the kernel accounts a thread before it
// releases its memory, so the last thread's unmapping of the address
// space (exit_mmap) is not in any record; the run's cgroup counter has it.
package taskstats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// FDFlag is the flag Exec appends, with the descriptor, to the command.
const FDFlag = "-taskstats-fd"

// The family's command and attribute numbers (linux/taskstats.h).
const (
	cmdGet          = 1
	attrCPUMask     = 3 // TASKSTATS_CMD_ATTR_REGISTER_CPUMASK
	typePID         = 1
	typeStats       = 3
	typeAggrPID     = 4
	recvBufferBytes = 64 << 20
)

// Exec opens a TASKSTATS socket in the current network namespace,
// registers it for the exits on every online CPU and replaces this
// process with args, the socket's descriptor appended as FDFlag N. When
// the socket cannot be had (a kernel without CONFIG_TASKSTATS), it says
// so on stderr and runs args as they are. It returns only on failure.
func Exec(args []string) error {
	if len(args) == 0 {
		return errors.New("taskstats: no command to run")
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return err
	}
	argv := append([]string{}, args...)
	if fd, err := open(); err != nil {
		fmt.Fprintf(os.Stderr, "%v: running %s without exit records\n", err, args[0])
	} else {
		argv = append(argv, FDFlag, strconv.Itoa(fd))
	}
	return syscall.Exec(path, argv, os.Environ())
}

// open returns a registered socket that survives exec.
func open() (int, error) {
	family, err := familyID()
	if err != nil {
		return -1, err
	}
	cpus, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return -1, fmt.Errorf("taskstats: online CPUs: %w", err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC) // no CLOEXEC: Exec hands it on
	if err != nil {
		return -1, fmt.Errorf("taskstats: socket: %w", err)
	}
	if err := register(fd, family, strings.TrimSpace(string(cpus))); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func familyID() (uint16, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return 0, fmt.Errorf("taskstats: generic netlink: %w", err)
	}
	defer c.Close()
	f, err := c.GetFamily("TASKSTATS")
	if err != nil {
		return 0, fmt.Errorf("taskstats: the kernel's TASKSTATS family (CONFIG_TASKSTATS): %w", err)
	}
	return f.ID, nil
}

// register binds fd, enlarges its receive buffer (a burst's exits arrive
// faster than a busy reader drains them) and asks for the exits on cpus.
func register(fd int, family uint16, cpus string) error {
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("taskstats: bind: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, recvBufferBytes); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, recvBufferBytes)
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(attrCPUMask, cpus)
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	msg := netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(family), Flags: netlink.Request},
		Data:   append([]byte{cmdGet, 1, 0, 0}, attrs...), // genlmsghdr: command, version
	}
	msg.Header.Length = uint32(16 + len(msg.Data))
	b, err := msg.MarshalBinary()
	if err != nil {
		return err
	}
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("taskstats: registering CPUs %s: %w", cpus, err)
	}
	return nil
}

// Thread is one exit record.
type Thread struct {
	Comm      string
	PID, TGID uint32 // thread and process
	PPID      uint32
	PeakRSSKB uint64
	Usage
}

// Offsets in struct taskstats (linux/taskstats.h; the struct only grows).
const (
	offRuns     = 16
	offWait     = 24
	offCPU      = 72
	offComm     = 80
	commBytes   = 32
	offPID      = 128
	offPPID     = 132
	offMinflt   = 168
	offHiwater  = 200
	offTGID     = 368
	minStatsLen = offTGID + 4 // version 12 and later
)

// parse reads the records of one generic netlink message's payload (after
// the genlmsghdr): one per TASKSTATS_TYPE_AGGR_PID. The per-process
// aggregate the kernel adds when a process's last thread exits holds only
// the sums of these, so it is not needed.
func parse(payload []byte) ([]Thread, error) {
	ad, err := netlink.NewAttributeDecoder(payload)
	if err != nil {
		return nil, err
	}
	var out []Thread
	for ad.Next() {
		if ad.Type() != typeAggrPID {
			continue
		}
		t, err := parseAggr(ad.Bytes())
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, ad.Err()
}

func parseAggr(b []byte) (Thread, error) {
	nd, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return Thread{}, err
	}
	var t Thread
	for nd.Next() {
		if nd.Type() != typeStats {
			continue
		}
		s := nd.Bytes()
		if len(s) < minStatsLen {
			return Thread{}, fmt.Errorf("taskstats: a record of %d bytes, want %d or more (kernel 5.13 and later)", len(s), minStatsLen)
		}
		le := binary.LittleEndian
		t = Thread{
			Comm:      string(bytes.TrimRight(s[offComm:offComm+commBytes], "\x00")),
			PID:       le.Uint32(s[offPID:]),
			TGID:      le.Uint32(s[offTGID:]),
			PPID:      le.Uint32(s[offPPID:]),
			PeakRSSKB: le.Uint64(s[offHiwater:]),
			Usage: Usage{
				CPU:        time.Duration(le.Uint64(s[offCPU:])),
				Wait:       time.Duration(le.Uint64(s[offWait:])),
				Runs:       le.Uint64(s[offRuns:]),
				MinorFault: le.Uint64(s[offMinflt:]),
			},
		}
	}
	return t, nd.Err()
}

// Listener collects the exit records arriving on a registered socket.
type Listener struct {
	fd int

	mu      sync.Mutex
	threads []Thread
	lost    int // times the socket's buffer overflowed
}

// Listen reads fd (from Exec) until the process ends.
func Listen(fd int) *Listener {
	l := &Listener{fd: fd}
	go l.read()
	return l
}

func (l *Listener) read() {
	buf := make([]byte, 1<<20)
	for {
		n, _, err := unix.Recvfrom(l.fd, buf, 0)
		if errors.Is(err, unix.ENOBUFS) {
			l.mu.Lock()
			l.lost++
			l.mu.Unlock()
			continue
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		l.add(buf[:n])
	}
}

func (l *Listener) add(b []byte) {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return
	}
	var got []Thread
	for _, m := range msgs {
		if len(m.Data) < 4 || m.Header.Type == unix.NLMSG_ERROR {
			continue
		}
		ts, err := parse(m.Data[4:])
		if err == nil {
			got = append(got, ts...)
		}
	}
	l.mu.Lock()
	l.threads = append(l.threads, got...)
	l.mu.Unlock()
}

// Mark is a position in the records, for Since.
func (l *Listener) Mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.threads)
}

// Since returns the records after mark and how many times records were
// lost since the listener started.
func (l *Listener) Since(mark int) ([]Thread, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Thread{}, l.threads[mark:]...), l.lost
}
