// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/gardener"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// The sandbox's API is this package's: what the integration suites, the bench, hack/sandbox and
// record-metrics use of the packages below it is named here too, so that they need not know which
// stand-in provides it.

// Cluster is one of the sandbox's API servers.
type Cluster = cluster.Cluster

// The garden's gardener-apiserver.
type (
	// GardenOptions are the settings of StartGarden.
	GardenOptions = gardener.GardenOptions
)

var (
	// StartGarden starts a garden: kube-apiserver with etcd and gardener-apiserver behind it.
	StartGarden = gardener.StartGarden
	// DisabledAdmissionPlugins are the admission plugins of gardener-apiserver the garden turns
	// off, each with the reason (docs/development/sandbox.md lists them).
	DisabledAdmissionPlugins = gardener.DisabledAdmissionPlugins
)

// The controllers the kubelet stand-ins run, and the processes they run them as.
type (
	// ControllerProcess is a controller the kubelet stand-in of a shoot runs or ran.
	ControllerProcess = kubelet.ControllerProcess
	// SourceController is a source-controller process (ShootHandle.StartSourceController).
	SourceController = kubelet.SourceController
	// Process is a started child process.
	Process = kubelet.Process
	// Memory is the resident memory of a process.
	Memory = kubelet.Memory
)

const (
	// FluxControllersEnv is the variable through which make hands the Flux controller binaries to
	// the integration tests and the demo.
	FluxControllersEnv = kubelet.FluxControllersEnv
	// KluctlControllersEnv is the variable through which make hands the kluctl controller binaries
	// to the integration tests and the demo.
	KluctlControllersEnv = kubelet.KluctlControllersEnv
	// ClockTicks is USER_HZ, the unit of the CPU times in /proc.
	ClockTicks = kubelet.ClockTicks
)

var (
	// ParseControllers reads the value of FluxControllersEnv or KluctlControllersEnv.
	ParseControllers = kubelet.ParseControllers
	// ControllersFromEnv reads FluxControllersEnv and KluctlControllersEnv.
	ControllersFromEnv = kubelet.ControllersFromEnv
	// FluxControllerImages returns the images of Options.FluxControllers the shoots' kubelet
	// stand-in runs.
	FluxControllerImages = kubelet.FluxControllerImages
	// KluctlControllerImages returns the images of Options.KluctlControllers the shoots' kubelet
	// stand-in runs.
	KluctlControllerImages = kubelet.KluctlControllerImages
	// NewestSourceController returns the binary of the newest embedded source-controller.
	NewestSourceController = kubelet.NewestSourceController
	// StartProcess starts a command as a Process.
	StartProcess = kubelet.StartProcess
	// FreePort returns a loopback TCP port that was free and is handed out once per process.
	FreePort = kubelet.FreePort
	// WaitReady waits until the readiness checks served at a health address pass.
	WaitReady = kubelet.WaitReady
	// ProcessMemory reads the resident memory of a process.
	ProcessMemory = kubelet.ProcessMemory
	// ParseProcessStat reads the content of /proc/<pid>/stat.
	ParseProcessStat = kubelet.ParseProcessStat
)
