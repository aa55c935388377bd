// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// noisyNeighbour holds the latency budget of a tenant beside an attacking one, which the
// integration specs only bound by timeouts that hold on a loaded machine: every shoot of the second
// project changes its controller settings again and again, each time to a value no shoot had
// before (a distinct render for the extension), while the first project's ConfigMap changes. The
// change must reach the first project's shoots as quickly as at rest (configChange's budget).
func (b *bench) noisyNeighbour(ctx context.Context) error {
	if len(b.projects) < 2 {
		return errors.New("the noisy neighbour phase needs two projects (-projects)")
	}
	attacker := b.projects[1]
	var shoots []*sandbox.ShootHandle
	for _, h := range b.shoots {
		if h.Project == attacker {
			shoots = append(shoots, h)
		}
	}
	step("changing the controller settings of the %d shoots of project %s again and again", len(shoots), attacker)
	attackCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		changes atomic.Int64
		wg      sync.WaitGroup
		errs    = make([]error, len(shoots))
	)
	for i, h := range shoots {
		wg.Go(func() {
			// An error after the measurement ended its context is the end of the attack, no failure.
			for round := 1; attackCtx.Err() == nil; round++ {
				if err := h.UpdateProviderConfig(attackCtx, noisySettings(i, round)); err != nil {
					if attackCtx.Err() == nil {
						errs[i] = err
					}
					return
				}
				changes.Add(1)
				if _, err := h.WaitSucceeded(attackCtx, phaseTimeout(attackCtx)); err != nil {
					if attackCtx.Err() == nil {
						errs[i] = fmt.Errorf("shoot %s, change %d: %w", h.Name, round, err)
					}
					return
				}
			}
		})
	}
	// The measurement starts once every attacking shoot has a change in flight.
	for changes.Load() < int64(len(shoots)) && attackCtx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	started := time.Now()
	measured := b.changeBranch(ctx, fmt.Sprintf(", while the %d shoots of project %s change their controller settings", len(shoots), attacker))
	duringMeasurement := changes.Load()
	stop()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the attacking shoots failed: %w", err)
	}
	if measured != nil {
		return measured
	}
	b.report.add("distinct controller settings of the attacking project written", fmt.Sprintf("%d in %s", duringMeasurement, dur(time.Since(started))), "", "")
	return nil
}

// noisySettings is a providerConfig whose controller settings no other shoot and round has.
func noisySettings(shoot, round int) []byte {
	data, err := json.Marshal(map[string]any{
		"controllers": map[string]any{
			flux.ControllersDefaults: map[string]any{
				"nodeSelector": map[string]string{"bench.example.com/noise": fmt.Sprintf("s%04d-r%04d", shoot, round)},
			},
		},
	})
	if err != nil {
		panic(err)
	}
	return data
}
