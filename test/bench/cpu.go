// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// cpuSnapshot is the CPU time used so far by the benchmark's processes, grouped by role, and by
// the whole machine.
type cpuSnapshot struct {
	at      time.Time
	groups  map[string]time.Duration
	busy    time.Duration
	elapsed time.Duration
}

// takeCPUSnapshot reads /proc. The benchmark process and all its descendants are grouped by what
// they are: the extension, each API server, etcd and the benchmark itself (which runs the shared
// gardener-resource-manager and the informers that follow the Extensions).
func takeCPUSnapshot(extensionPID int) (cpuSnapshot, error) {
	s := cpuSnapshot{at: time.Now(), groups: map[string]time.Duration{}}
	procs, err := readProcs()
	if err != nil {
		return s, err
	}
	self := os.Getpid()
	for pid, p := range procs {
		if pid != self && !descendsFrom(procs, pid, self) {
			continue
		}
		s.groups[roleOf(procs, pid, self, extensionPID)] += p.cpu
	}
	s.busy, s.elapsed, err = machineCPU()
	return s, err
}

type proc struct {
	ppid    int
	cpu     time.Duration
	cmdline string
}

func readProcs() (map[int]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("failed listing processes: %w", err)
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			// The process ended meanwhile.
			continue
		}
		st, err := kubelet.ParseProcessStat(stat)
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		p := proc{ppid: st.PPID, cpu: st.CPU}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		p.cmdline = string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		procs[pid] = p
	}
	return procs, nil
}

func descendsFrom(procs map[int]proc, pid, ancestor int) bool {
	for range 64 {
		p, ok := procs[pid]
		if !ok || p.ppid == 0 {
			return false
		}
		if p.ppid == ancestor {
			return true
		}
		pid = p.ppid
	}
	return false
}

// Roles of processes.
const (
	roleBenchmark = "benchmark process (resource managers, informers, git server)"
	roleExtension = "extension"
	roleKluctl    = "kluctl controllers (with their Python renderers)"
	roleFlux      = "Flux controllers"
	roleOther     = "other (git, go)"
)

// roleOf is the role of a process, or else of its nearest ancestor below the benchmark that has
// one: a kluctl controller's Python renderers count as the controller.
func roleOf(procs map[int]proc, pid, self, extensionPID int) string {
	for range 64 {
		p, ok := procs[pid]
		if !ok {
			break
		}
		if r := role(pid, p, self, extensionPID); r != roleOther || p.ppid == self || p.ppid == 0 {
			return r
		}
		pid = p.ppid
	}
	return roleOther
}

func role(pid int, p proc, self, extensionPID int) string {
	binary, args, _ := strings.Cut(p.cmdline, " ")
	switch {
	case pid == self:
		return roleBenchmark
	case pid == extensionPID:
		return roleExtension
	case filepath.Base(binary) == "kluctl" && strings.HasPrefix(args, "controller run"):
		return roleKluctl
	case strings.HasSuffix(filepath.Base(binary), "-controller"):
		return roleFlux
	case strings.Contains(p.cmdline, "kube-apiserver"):
		for _, name := range []string{"shared-shoot", "seed", "garden"} {
			if strings.Contains(p.cmdline, "shoot-flux-sandbox-"+name+"-") {
				return "kube-apiserver " + name
			}
		}
		return "kube-apiserver"
	case strings.Contains(p.cmdline, "etcd"):
		return "etcd (all clusters)"
	}
	return roleOther
}

// machineCPU returns the busy and the total CPU time of the machine from /proc/stat.
func machineCPU() (busy, total time.Duration, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("failed reading /proc/stat: %w", err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var all, idle int64
	for i, f := range fields[1:] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("invalid /proc/stat value %q: %w", f, err)
		}
		// guest and guest_nice are already part of user and nice.
		if i >= 8 {
			break
		}
		all += v
		// idle and iowait.
		if i == 3 || i == 4 {
			idle += v
		}
	}
	return time.Duration(all-idle) * time.Second / kubelet.ClockTicks, time.Duration(all) * time.Second / kubelet.ClockTicks, nil
}

// cpuUse is what the processes used between two snapshots, in cores.
type cpuUse struct {
	groups  map[string]float64
	machine float64
	cores   float64
}

func (s cpuSnapshot) since(before cpuSnapshot) cpuUse {
	wall := s.at.Sub(before.at).Seconds()
	u := cpuUse{groups: map[string]float64{}}
	if wall <= 0 {
		return u
	}
	for g, t := range s.groups {
		// A process that restarted counts from zero.
		d := t - before.groups[g]
		if d < 0 {
			d = t
		}
		u.groups[g] = d.Seconds() / wall
	}
	if total := (s.elapsed - before.elapsed).Seconds(); total > 0 {
		u.machine = (s.busy - before.busy).Seconds() / total
		u.cores = total / wall
	}
	return u
}

func (u cpuUse) sortedGroups() []string {
	groups := make([]string, 0, len(u.groups))
	for g := range u.groups {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return u.groups[groups[i]] > u.groups[groups[j]] })
	return groups
}
