// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package scripts_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const repoRoot = "../.."

// k8sVersion is the version the fake kube-apiserver reports; the script is told to expect it.
const k8sVersion = "v1.36.4"

// writeExecutable writes a shell script with the given body.
func writeExecutable(path, body string) {
	GinkgoHelper()
	Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
	Expect(os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755)).To(Succeed()) //nolint:gosec // a test fake that must be executable
}

// busy keeps every core busy until the returned function is called, as a CI machine running
// builds beside the check does.
func busy() func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range runtime.NumCPU() * 2 {
		wg.Go(func() {
			x := 0
			for ctx.Err() == nil {
				for i := range 100000 {
					x += i
				}
			}
			_ = x
		})
	}
	return func() { cancel(); wg.Wait() }
}

// script runs a hack script with the given cache and extra environment.
func script(name, cache string, env ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(repoRoot, "hack", name)) //nolint:gosec // a script of this repository
	cmd.Env = append(os.Environ(), append([]string{"SHOOT_FLUX_CACHE=" + cache}, env...)...)
	return cmd
}

var _ = Describe("the version checks of the build scripts", func() {
	It("accept binaries that report the expected versions on every run, however the processes are scheduled", func() {
		cache := GinkgoT().TempDir()
		dest := filepath.Join(cache, "envtest", k8sVersion)
		writeExecutable(filepath.Join(dest, "kube-apiserver"), fmt.Sprintf("echo 'Kubernetes %s'\n", k8sVersion))
		// etcd reports its version on the first of several lines. A check that pipes this into
		// `grep -q` under pipefail fails whenever grep has exited before etcd writes the rest; the
		// long tail makes that the usual case rather than a rare one.
		writeExecutable(filepath.Join(dest, "etcd"), `echo 'etcd Version: 3.6.8'
echo 'Git SHA: 0000000'
echo 'Go Version: go1.26.8'
echo 'Go OS/Arch: linux/amd64'
i=0; while [ $i -lt 2000 ]; do echo "padding line $i"; i=$((i+1)); done
`)
		Expect(os.WriteFile(filepath.Join(dest, "etcd.version"), []byte("3.6.8\n"), 0o644)).To(Succeed())

		stop := busy()
		defer stop()
		const runs = 100
		var failures []string
		for i := range runs {
			out, err := script("build-envtest.sh", cache, "K8S_VERSION="+k8sVersion).Output()
			if err != nil {
				failures = append(failures, fmt.Sprintf("run %d: %v: %s", i, err, stderrOf(err)))
				continue
			}
			if got := strings.TrimSpace(string(out)); got != dest {
				failures = append(failures, fmt.Sprintf("run %d printed %q instead of %q", i, got, dest))
			}
		}
		Expect(failures).To(BeEmpty(), "%d of %d runs of hack/build-envtest.sh failed", len(failures), runs)
	})

	It("rebuild, rather than accept, binaries that report another version", func() {
		cache := GinkgoT().TempDir()
		dest := filepath.Join(cache, "envtest", k8sVersion)
		writeExecutable(filepath.Join(dest, "kube-apiserver"), "echo 'Kubernetes v1.36.4'\n")
		writeExecutable(filepath.Join(dest, "etcd"), "echo 'etcd Version: 3.6.7'\n")
		Expect(os.WriteFile(filepath.Join(dest, "etcd.version"), []byte("3.6.8\n"), 0o644)).To(Succeed())

		// A rebuild starts by downloading k8s.io/kubernetes; an unreachable proxy makes it fail
		// at once, which shows the cached binaries were not taken as they are.
		out, err := script("build-envtest.sh", cache, "K8S_VERSION="+k8sVersion, "GOPROXY=off", "GOMODCACHE="+GinkgoT().TempDir()).CombinedOutput()
		Expect(err).To(HaveOccurred(), "a stale etcd was accepted: %s", out)
		Expect(string(out)).NotTo(ContainSubstring(dest + "\n"))
	})

	It("accept a cached kluctl controller only when it reports its version", func() {
		cache := GinkgoT().TempDir()
		versions, err := os.ReadDir(filepath.Join(repoRoot, "pkg", "manifests", "kluctl"))
		Expect(err).NotTo(HaveOccurred())
		var want []string
		for _, v := range versions {
			bin := filepath.Join(cache, "kluctl-controller", v.Name(), "kluctl")
			writeExecutable(bin, fmt.Sprintf("[ \"$1\" = version ] && echo %s\n", strings.TrimPrefix(v.Name(), "v")))
			want = append(want, "kluctl:"+v.Name()+"="+bin)
		}
		out, err := script("build-kluctl-controller.sh", cache).Output()
		Expect(err).NotTo(HaveOccurred(), stderrOf(err))
		Expect(strings.Fields(string(out))).To(Equal(want))

		// A binary of another version is rebuilt; without a source that fails, naming the cause.
		bin := filepath.Join(cache, "kluctl-controller", versions[0].Name(), "kluctl")
		writeExecutable(bin, "echo 0.0.0\n")
		empty := GinkgoT().TempDir()
		out, err = script("build-kluctl-controller.sh", cache, "KLUCTL_SOURCE="+empty, "KLUCTL_REPOSITORY="+filepath.Join(empty, "none")).CombinedOutput()
		Expect(err).To(HaveOccurred(), "a kluctl binary of another version was accepted: %s", out)
		Expect(string(out)).To(ContainSubstring("cannot clone"))
	})
})

var _ = Describe("make", func() {
	It("stops with the build script's message when a test binary cannot be built", func() {
		// A cache path below a file cannot be created: hack/build-envtest.sh fails at once.
		file := filepath.Join(GinkgoT().TempDir(), "file")
		Expect(os.WriteFile(file, nil, 0o644)).To(Succeed())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, target := range []string{"test-integration", "test-deployed", "bench", "demo", "test-binaries"} {
			cmd := exec.CommandContext(ctx, "make", "-C", repoRoot, target)
			cmd.Env = append(os.Environ(), "SHOOT_FLUX_CACHE="+filepath.Join(file, "cache"))
			out, err := cmd.CombinedOutput()
			Expect(err).To(HaveOccurred(), "make %s went on: %s", target, out)
			Expect(string(out)).To(ContainSubstring("Not a directory"), "make %s", target)
			Expect(string(out)).NotTo(MatchRegexp(`(?m)^(ok|FAIL|---)\s`), "make %s ran tests without the binaries", target)
		}
	})
})

// stderrOf returns the standard error an exec.ExitError captured.
func stderrOf(err error) string {
	if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
		return string(exitErr.Stderr)
	}
	return ""
}
