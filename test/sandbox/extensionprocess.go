// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"errors"
	"time"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// What the deployed extension's process costs, read from /proc as the kubelet stand-in of the
// seed runs it. The in-process extension shares this process, so there is nothing of its own to
// read.

// controllerBinaries returns the binaries of Options.FluxControllers and Options.KluctlControllers
// in one map, by image, for the kubelet stand-ins of the shoots.
func (s *Sandbox) controllerBinaries() map[string]string {
	return kubelet.Binaries(s.opts.FluxControllers, s.opts.KluctlControllers)
}

// ExtensionCPU reads the CPU time the running deployed extension (Options.Deployed) used so far;
// the in-process extension shares this process's, so there is nothing of its own to read.
func (s *Sandbox) ExtensionCPU() (time.Duration, error) {
	s.mu.Lock()
	d := s.deployed
	s.mu.Unlock()
	if d == nil {
		return 0, errors.New("the extension does not run as deployed")
	}
	pid := d.kubelet.PID()
	if pid == 0 {
		return 0, errors.New("the deployed extension's pod does not run")
	}
	stat, err := kubelet.ReadProcessStat(pid)
	return stat.CPU, err
}

// BenchRSS500Shoots is the highest RSS `make bench` measured for the extension serving 500 shoots
// in 10 projects, before a resync (docs/performance.md, "Scale: 500 shoots", quotes it). Specs that
// attack the extension's memory compare against it.
const BenchRSS500Shoots = 116 << 20

// ExtensionMemory reads the resident memory of the running deployed extension (Options.Deployed);
// the in-process extension shares this process's memory, so there is nothing of its own to read.
func (s *Sandbox) ExtensionMemory() (kubelet.Memory, error) {
	s.mu.Lock()
	d := s.deployed
	s.mu.Unlock()
	if d == nil {
		return kubelet.Memory{}, errors.New("the extension does not run as deployed")
	}
	pid := d.kubelet.PID()
	if pid == 0 {
		return kubelet.Memory{}, errors.New("the deployed extension's pod does not run")
	}
	// The pod's set-up execs into the extension, so the started process is the extension itself.
	return kubelet.ProcessMemory(pid)
}
