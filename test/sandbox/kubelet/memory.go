// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is the resident memory of a process: anonymous (heap, stacks) and file-backed (mostly the
// pages of the binary it touched), and the highest RSS since the process started, from
// /proc/<pid>/status.
type Memory struct {
	RSS, Anon, File, Peak int64
}

// ProcessMemory reads the resident memory of the process pid.
func ProcessMemory(pid int) (Memory, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return Memory{}, fmt.Errorf("failed reading the memory of process %d: %w", pid, err)
	}
	defer func() { _ = f.Close() }()
	return ParseMemory(f)
}

// ParseMemory reads VmRSS, RssAnon, RssFile and VmHWM from a /proc/<pid>/status file, in bytes.
func ParseMemory(r io.Reader) (Memory, error) {
	var (
		m     Memory
		found bool
	)
	s := bufio.NewScanner(r)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) != 3 || fields[2] != "kB" {
			continue
		}
		var target *int64
		switch fields[0] {
		case "VmRSS:":
			target, found = &m.RSS, true
		case "RssAnon:":
			target = &m.Anon
		case "RssFile:":
			target = &m.File
		case "VmHWM:":
			target = &m.Peak
		default:
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("invalid %s %q: %w", fields[0], fields[1], err)
		}
		*target = kb * 1024
	}
	if err := s.Err(); err != nil {
		return m, err
	}
	if !found {
		return m, errors.New("no VmRSS in process status")
	}
	return m, nil
}

// String formats the memory as "RSS (anon + file)" in MiB.
func (m Memory) String() string {
	const mib = 1 << 20
	return fmt.Sprintf("%.1f MiB (%.1f + %.1f)", float64(m.RSS)/mib, float64(m.Anon)/mib, float64(m.File)/mib)
}
