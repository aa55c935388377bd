// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// phaseStats are the counters of one phase.
type phaseStats struct {
	requests      requests
	seedWrites    writeBreakdown
	gardenWrites  writeBreakdown
	seedReads     map[string]int
	gardenReads   map[string]int
	reconciles    map[string]float64
	reconcileMean time.Duration
	queueMean     time.Duration
	throttled     int
	after         metrics
	cpu           cpuUse
	// seedEvents are the extension's requests to the seed API server, from its audit log.
	seedEvents []sandbox.AuditEvent
}

// measure runs a phase and returns the extension's requests during it: from its metrics (its own
// count) and from the audit logs (the API servers' count, with what each write was for).
func (b *bench) measure(ctx context.Context, fn func(context.Context) error) (*phaseStats, error) {
	proc := b.ext
	before, err := proc.scrape(ctx)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(b.seedAudit.Mark(), b.gardenAudit.Mark()); err != nil {
		return nil, err
	}
	logOffset := fileSize(b.extArgs.logPath)
	cpuBefore, err := takeCPUSnapshot(proc.process.Pid())
	if err != nil {
		return nil, err
	}

	if err := fn(ctx); err != nil {
		return nil, err
	}
	// CPU use is taken before the settle time, which would dilute it.
	cpuAfter, err := takeCPUSnapshot(b.ext.process.Pid())
	if err != nil {
		return nil, err
	}
	if err := sandbox.Sleep(ctx, b.opts.settle); err != nil {
		return nil, err
	}

	after, err := b.ext.scrape(ctx)
	if err != nil {
		return nil, err
	}
	if b.ext != proc {
		// A restarted process counts from zero.
		before = nil
	}
	seedEvents, err := b.seedAudit.Read(sandbox.ByUser(extensionUser))
	if err != nil {
		return nil, err
	}
	gardenEvents, err := b.gardenAudit.Read(sandbox.ByUser(extensionUser))
	if err != nil {
		return nil, err
	}
	s := &phaseStats{
		requests:     requestCounts(after, b.seedHost, b.gardenHost).minus(requestCounts(before, b.seedHost, b.gardenHost)),
		seedWrites:   breakdown(seedEvents),
		gardenWrites: breakdown(gardenEvents),
		seedReads:    readBreakdown(seedEvents),
		gardenReads:  readBreakdown(gardenEvents),
		reconciles:   map[string]float64{},
		after:        after,
		cpu:          cpuAfter.since(cpuBefore),
		seedEvents:   seedEvents,
	}
	ours := func(l map[string]string) bool { return l["controller"] == "shoot-flux" }
	for _, result := range []string{"success", "error", "requeue", "requeue_after"} {
		match := func(l map[string]string) bool { return ours(l) && l["result"] == result }
		if v := after.value("controller_runtime_reconcile_total", match) - before.value("controller_runtime_reconcile_total", match); v > 0 {
			s.reconciles[result] = v
			s.reconciles["total"] += v
		}
	}
	s.reconcileMean = meanSeconds(before, after, "controller_runtime_reconcile_time_seconds", ours)
	queue := func(l map[string]string) bool { return l["name"] == "shoot-flux" }
	s.queueMean = meanSeconds(before, after, "workqueue_queue_duration_seconds", queue)
	s.throttled = countInFile(b.extArgs.logPath, logOffset, "client-side throttling")
	return s, nil
}

func meanSeconds(before, after metrics, name string, match func(map[string]string) bool) time.Duration {
	count := after.value(name+"_count", match) - before.value(name+"_count", match)
	if count <= 0 {
		return 0
	}
	sum := after.value(name+"_sum", match) - before.value(name+"_sum", match)
	return time.Duration(sum / count * float64(time.Second))
}

func (b *bench) addRequests(s *phaseStats, n float64, minWrites string) {
	r := b.report
	r.add("API requests per shoot (extension's /metrics): seed reads / writes",
		fmt.Sprintf("%s / %s", perShoot(s.requests.SeedReads, n), perShoot(s.requests.SeedWrites, n)), minWrites, "")
	r.add("API requests per shoot (extension's /metrics): garden reads / writes",
		fmt.Sprintf("%s / %s", perShoot(s.requests.GardenReads, n), perShoot(s.requests.GardenWrites, n)), "", "")
	for _, part := range []struct {
		cluster string
		writes  writeBreakdown
		reads   map[string]int
	}{{"seed", s.seedWrites, s.seedReads}, {"garden", s.gardenWrites, s.gardenReads}} {
		for _, what := range sortedKeys(part.writes.byWhat) {
			r.add(fmt.Sprintf("  %s write: %s", part.cluster, what), perShoot(float64(part.writes.byWhat[what]), n), "", "per shoot, audit log")
		}
		if part.writes.failed > 0 {
			r.add(fmt.Sprintf("  %s writes rejected (conflict, already exists)", part.cluster), fmt.Sprint(part.writes.failed), "", "total, audit log")
			for _, what := range sortedKeys(part.writes.failedByWhat) {
				r.add(fmt.Sprintf("    rejected: %s", what), fmt.Sprint(part.writes.failedByWhat[what]), "", "total, audit log")
			}
		}
		for _, what := range sortedKeys(part.reads) {
			r.add(fmt.Sprintf("  %s read: %s", part.cluster, what), perShoot(float64(part.reads[what]), n), "", "per shoot, audit log")
		}
	}
}

// addOwnWrites adds the row of the actuator's writes in both clusters, whatever the resource, with
// a row per resource written; goal is the row's goal ("0" at rest).
func (b *bench) addOwnWrites(s *phaseStats, goal string) int {
	own := s.seedWrites.byOwner[ownerExtension] + s.gardenWrites.byOwner[ownerExtension]
	ok := ""
	if goal == "0" {
		ok = verdict(own == 0)
	}
	b.report.add("writes by the shoot-flux actuator (total, every resource)", fmt.Sprint(own), goal, ok)
	for _, part := range []struct {
		cluster string
		writes  writeBreakdown
	}{{"seed", s.seedWrites}, {"garden", s.gardenWrites}} {
		for _, resource := range sortedKeys(part.writes.ownByResource) {
			b.report.add(fmt.Sprintf("  of which %s %s", part.cluster, resource), fmt.Sprint(part.writes.ownByResource[resource]), "", "total, audit log")
		}
	}
	if leases := s.seedWrites.byOwner[ownerProcess]; leases > 0 {
		b.report.note("The extension process also renewed its leases (leader election, gardener's heartbeat) %d times: for no shoot.", leases)
	}
	return own
}

func (b *bench) addReconcileStats(s *phaseStats) {
	var parts []string
	for _, k := range []string{"success", "error", "requeue", "requeue_after"} {
		if v := s.reconciles[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	r := b.report
	r.add("reconciles", strings.Join(parts, ", "), "", "")
	r.add("mean reconcile duration / mean wait in queue", fmt.Sprintf("%s / %s", dur(s.reconcileMean), dur(s.queueMean)), "", "")
	if s.throttled > 0 {
		r.add("client-side throttling messages in the extension log", fmt.Sprint(s.throttled), "0", verdict(false))
	}
	r.add(fmt.Sprintf("CPU busy (machine, %.0f cores)", s.cpu.cores), fmt.Sprintf("%.0f%%", 100*s.cpu.machine), "", "")
	var ours float64
	for _, g := range s.cpu.sortedGroups() {
		ours += s.cpu.groups[g]
		if s.cpu.groups[g] >= 0.005 {
			r.add("  cores used by "+g, fmt.Sprintf("%.2f", s.cpu.groups[g]), "", "")
		}
	}
	if other := s.cpu.machine*s.cpu.cores - ours; other >= 0.1 {
		r.add("  cores used by processes outside the benchmark", fmt.Sprintf("%.2f", other), "", "the machine was shared")
	}
}

func (b *bench) addApplyLatencies(result phaseResult) {
	for _, name := range managedResourceNames {
		l := result.ApplyLatencies[name]
		if len(l) == 0 {
			continue
		}
		b.report.add("  "+name+" written → applied: p50 / p90 / max",
			fmt.Sprintf("%s / %s / %s", dur(percentile(l, 0.5)), dur(percentile(l, 0.9)), dur(percentile(l, 1))), "", "")
	}
}

// addMemory reports the extension's memory. With a profile name, it also saves the extension's
// heap profile under that name in the log directory and names the functions holding most of it.
func (b *bench) addMemory(ctx context.Context, s *phaseStats, profileName string) error {
	mem, err := b.ext.memory()
	if err != nil {
		return err
	}
	heap := s.after.value("go_memstats_heap_inuse_bytes", nil)
	b.report.add(fmt.Sprintf("extension memory at %d shoots: RSS (anon + file) / Go heap in use", len(b.shoots)),
		fmt.Sprintf("%s (%s + %s) / %s", bytesize(int(mem.RSS)), bytesize(int(mem.Anon)), bytesize(int(mem.File)), bytesize(int(heap))),
		"RSS ≤ 150 MiB", verdict(mem.RSS <= 150<<20))
	if profileName == "" {
		return nil
	}
	path := filepath.Join(b.opts.logDir, profileName)
	prof, err := b.ext.heapProfile(ctx, path)
	if err != nil {
		return err
	}
	top, total := heapTop(prof, heapTopN)
	var parts []string
	for _, e := range top {
		parts = append(parts, fmt.Sprintf("%s %s", e.function, bytesize(int(e.bytes))))
	}
	b.report.note("Live heap as of the last GC %s, most of it allocated by (flat): %s. Profile: %s (go tool pprof).",
		bytesize(int(total)), strings.Join(parts, ", "), path)
	return nil
}

type heapEntry struct {
	function string
	bytes    int64
}

// heapTop sums a heap profile's in-use bytes by the function that allocated them and returns the
// n largest and the total.
func heapTop(prof *profile.Profile, n int) ([]heapEntry, int64) {
	index := -1
	for i, st := range prof.SampleType {
		if st.Type == "inuse_space" {
			index = i
		}
	}
	if index < 0 {
		return nil, 0
	}
	byFunction := map[string]int64{}
	var total int64
	for _, sample := range prof.Sample {
		v := sample.Value[index]
		total += v
		name := "(unknown)"
		if len(sample.Location) > 0 && len(sample.Location[0].Line) > 0 && sample.Location[0].Line[0].Function != nil {
			name = sample.Location[0].Line[0].Function.Name
		}
		byFunction[name] += v
	}
	entries := make([]heapEntry, 0, len(byFunction))
	for f, v := range byFunction {
		entries = append(entries, heapEntry{function: f, bytes: v})
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].bytes != entries[j].bytes {
			return entries[i].bytes > entries[j].bytes
		}
		return entries[i].function < entries[j].function
	})
	if len(entries) > n {
		entries = entries[:n]
	}
	return entries, total
}
