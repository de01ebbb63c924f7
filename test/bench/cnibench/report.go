package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"cnisuite/test/bench/crirow"
)

func flagLine() string {
	return strings.Join(os.Args[1:], " ")
}

func (rep *report) markdown() string {
	var b strings.Builder
	if len(rep.Scenarios) > 0 {
		fmt.Fprintf(&b, "| chain | client | N | ADD median / p95 ms | CHECK median / p95 ms | DEL median / p95 ms | ADD, CHECK, DEL × floor | growth ADD, DEL | growth ÷ floor's growth |\n")
		fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, s := range rep.Scenarios {
		cell := func(v string) string { return fmt.Sprintf("%.1f / %.1f", s.Verbs[v].Median, s.Verbs[v].P95) }
		ratio := "–"
		if s.ToFloor != nil {
			ratio = fmt.Sprintf("%.2f, %.2f, %.2f", s.ToFloor["add"], s.ToFloor["check"], s.ToFloor["del"])
		}
		adjusted := "–"
		if s.GrowthOverFloor != nil {
			adjusted = fmt.Sprintf("%.2f, %.2f", s.GrowthOverFloor["add"], s.GrowthOverFloor["del"])
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %.2f, %.2f | %s |\n", s.Chain, s.Client, s.N,
			cell("add"), cell("check"), cell("del"), ratio, s.Verbs["add"].Growth, s.Verbs["del"].Growth, adjusted)
	}
	fmt.Fprintf(&b, "\n| measurement | result |\n|---|---|\n")
	rep.measurements(&b)
	return b.String()
}

// measurements writes the rows of the second table: errors, host-local,
// bursts, busy node, STATUS, upgrade, per plugin, memory.
func (rep *report) measurements(b *strings.Builder) {
	rep.cpuRows(b)
	for backend, n := range rep.ParallelErrors {
		fmt.Fprintf(b, "| %d parallel ADDs then DELs, %s | %d errors |\n", rep.Parallel, backend, n)
	}
	for _, k := range slices.Sorted(maps.Keys(rep.HostLocal)) {
		s := rep.HostLocal[k]
		fmt.Fprintf(b, "| host-local ADD+DEL, %s existing leases | median %.2f ms, p95 %.2f ms |\n", k, s.Median, s.P95)
	}
	for _, bu := range rep.Bursts {
		burstRows(b, bu)
	}
	for _, bn := range rep.Busy {
		fmt.Fprintf(b, "| busy node, %s, N=%d: ADD median with %d NAT rules ÷ without | %.1f ms ÷ %.1f ms = %.2f |\n",
			bn.Chain, bn.N, bn.Rules, bn.BusyAddMS, bn.QuietAddMS, bn.BusyAddMS/bn.QuietAddMS)
	}
	for _, st := range rep.Status {
		fmt.Fprintf(b, "| STATUS of the %s chain (libcni), host-local holding %d leases, %d pods attached: median ours ÷ floor's (p95) | %.2f ms ÷ %.2f ms = %.2f (%.2f ms, %.2f ms) |\n",
			st.Chain, st.Leases, st.Pods, st.Ours.Median, st.Floor.Median, st.Ours.Median/st.Floor.Median, st.Ours.P95, st.Floor.P95)
		fmt.Fprintf(b, "| STATUS of the %s chain, %d pods, each of our plugins (median ms) | %s |\n", st.Chain, st.Pods, perPluginCell(st.PerPlugin))
	}
	if u := rep.Upgrade; u != nil {
		fmt.Fprintf(b, "| host-local on disk, %d reference leases just written: first ADD ÷ reading every lease once | %.0f ms ÷ %.0f ms = %.2f |\n",
			u.Leases, u.FirstMS, u.ScanMS, u.FirstMS/u.ScanMS)
		fmt.Fprintf(b, "| host-local on disk: next 20 ADDs ÷ 20 ADDs on an empty directory (medians) | %.2f ms ÷ %.2f ms = %.2f |\n",
			u.Next.Median, u.Empty.Median, u.Next.Median/u.Empty.Median)
	}
	for _, k := range slices.Sorted(maps.Keys(rep.PerPlugin)) {
		v := rep.PerPlugin[k]
		fmt.Fprintf(b, "| %s alone (libcni), median ms | ADD %.1f, CHECK %.1f, DEL %.1f |\n", k, v["ADD"], v["CHECK"], v["DEL"])
	}
	crirow.Markdown(b, rep.CRI)
	for _, p := range slices.Sorted(maps.Keys(rep.PeakKB)) {
		fmt.Fprintf(b, "| peak RSS of %s (GNU time, any backend) | %s |\n", p, peakCell(rep.PeakKB[p]))
	}
}

// cpuRows writes the CPU time per call of each sequential scenario:
// medians, and the growth (last fifth over first fifth) of ADD and DEL.
func (rep *report) cpuRows(b *strings.Builder) {
	for _, s := range rep.Scenarios {
		if len(s.CPU) == 0 || s.CPU["add"].N == 0 {
			continue
		}
		c := s.CPU
		fmt.Fprintf(b, "| CPU per call, %s, N=%d: ADD, CHECK, DEL median; growth ADD, DEL | %.1f, %.1f, %.1f ms; %.2f, %.2f |\n",
			s.Chain, s.N, c["add"].Median, c["check"].Median, c["del"].Median, c["add"].Growth, c["del"].Growth)
	}
}

func perPluginCell(m map[string]float64) string {
	var parts []string
	for _, p := range []string{"bridge", "host-local", "tuning", "portmap"} {
		if v, ok := m[p]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f", p, v))
		}
	}
	return strings.Join(parts, ", ")
}

func peakCell(byVerb map[string]int64) string {
	var parts []string
	for _, v := range []string{"ADD", "CHECK", "DEL"} {
		if kb, ok := byVerb[v]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f MiB", v, float64(kb)/1024))
		}
	}
	return strings.Join(parts, ", ")
}

func (rep *report) print(o *options) {
	md := rep.markdown()
	fmt.Println(md)
	if data, err := json.Marshal(rep); err == nil {
		fmt.Printf("BENCH_JSON %s\n", data)
	}
	fmt.Printf("\ncommand: %s\n", rep.Command)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(md+"\ncommand: "+rep.Command+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "cnibench: writing report:", err)
		}
	}
}

// burstRows are the rows of one burst: its phases against the floor's,
// their CPU, the DEL calls' own times and, with -cgroup-cpu, the CPU of
// every process of the run.
func burstRows(b *strings.Builder, bu *Burst) {
	phase := "ADD"
	if bu.Check {
		phase = "ADD+CHECK"
	}
	fmt.Fprintf(b, "| burst %d×%d, %s: %s phase ÷ floor's, DEL phase ÷ floor's, errors | %.2f s ÷ %.2f s = %.2f, %.2f s ÷ %.2f s = %.2f, %d (floor %d) |\n",
		bu.N, bu.K, bu.Chain, phase, bu.AddS, bu.FloorAddS, bu.AddS/bu.FloorAddS, bu.DelS, bu.FloorDelS, bu.DelS/bu.FloorDelS, bu.Errors, bu.FloorErrors)
	fmt.Fprintf(b, "| burst %d×%d, %s: CPU per pod of the waited-for processes, %s phase, DEL phase (floor's) | %.1f ms (%.1f), %.1f ms (%.1f) |\n",
		bu.N, bu.K, bu.Chain, phase, bu.AddCPU, bu.FloorAddCPU, bu.DelCPU, bu.FloorDelCPU)
	fmt.Fprintf(b, "| burst %d×%d, %s: each DEL call of the DEL phase, median and p95 (floor's) | %.1f ms, %.1f ms (%.1f ms, %.1f ms) |\n",
		bu.N, bu.K, bu.Chain, bu.DelCalls.Median, bu.DelCalls.P95, bu.FloorDelCalls.Median, bu.FloorDelCalls.P95)
	if bu.FloorDelGroupCPU > 0 {
		fmt.Fprintf(b, "| burst %d×%d, %s: CPU per pod of the run's cgroup (helpers included), %s phase, DEL phase (floor's) | %.1f ms (%.1f), %.1f ms (%.1f) |\n",
			bu.N, bu.K, bu.Chain, phase, bu.AddGroupCPU, bu.FloorAddGroupCPU, bu.DelGroupCPU, bu.FloorDelGroupCPU)
	}
	for _, ph := range []struct {
		name         string
		ours, floors []PerPod
	}{{phase, bu.AddProcs, bu.FloorAddProcs}, {"DEL", bu.DelProcs, bu.FloorDelProcs}} {
		if ph.ours != nil {
			fmt.Fprintf(b, "| burst %d×%d, %s: %s phase by process, per pod: processes, CPU, run-queue wait (ms), times on a CPU (exit records) | %s; floor: %s |\n",
				bu.N, bu.K, bu.Chain, ph.name, perPodText(ph.ours), perPodText(ph.floors))
		}
	}
}
