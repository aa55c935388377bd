// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is USER_HZ, the unit of the CPU times in /proc; it is 100 on every Linux platform Go
// supports (sysconf is not reachable without cgo).
const ClockTicks = 100

// ProcessStat is what /proc/<pid>/stat says of a process.
type ProcessStat struct {
	// PPID is the parent's process ID.
	PPID int
	// CPU is the user and system time of the process and of its children that ended and were
	// waited for, so that short-lived helpers (kluctl's Python renderers, git) stay in their
	// parent's count once they are gone.
	CPU time.Duration
}

// ParseProcessStat reads the content of /proc/<pid>/stat. The command name in parentheses may
// contain spaces, so fields are counted after its closing parenthesis.
func ParseProcessStat(stat []byte) (ProcessStat, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return ProcessStat{}, fmt.Errorf("malformed stat %q", stat)
	}
	fields := strings.Fields(string(stat[end+1:]))
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17), i.e. indexes
	// 1 and 11 to 14 here.
	if len(fields) < 15 {
		return ProcessStat{}, fmt.Errorf("short stat %q", stat)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return ProcessStat{}, fmt.Errorf("invalid ppid %q: %w", fields[1], err)
	}
	var ticks int64
	for _, f := range fields[11:15] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return ProcessStat{}, fmt.Errorf("invalid cpu time %q: %w", f, err)
		}
		ticks += v
	}
	return ProcessStat{PPID: ppid, CPU: time.Duration(ticks) * time.Second / ClockTicks}, nil
}

// ReadProcessStat reads /proc/<pid>/stat.
func ReadProcessStat(pid int) (ProcessStat, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcessStat{}, fmt.Errorf("failed reading the state of process %d: %w", pid, err)
	}
	return ParseProcessStat(stat)
}
