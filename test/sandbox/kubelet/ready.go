// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Readiness as kubelet's probe sees it, for the in-process extension (sandbox.StartExtension), the
// bench's extension process and the seed's kubelet stand-in.

var (
	// ReadyTimeout bounds the wait for a started extension process to report ready.
	ReadyTimeout = 2 * time.Minute
	// readyPollInterval is how often readiness is checked, also by the seed's kubelet stand-in.
	readyPollInterval = 100 * time.Millisecond
	// httpTimeout bounds one request to an extension's health endpoint, also of the seed's
	// kubelet stand-in's probe.
	httpTimeout = 10 * time.Second
)

// WaitReady waits until the readiness checks served at healthAddr pass; exited reports a process
// that ended meanwhile, which fails the wait at once.
func WaitReady(ctx context.Context, healthAddr string, exited func() (bool, error)) error {
	client := &http.Client{Timeout: httpTimeout}
	err := wait.PollUntilContextTimeout(ctx, readyPollInterval, ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if done, err := exited(); done {
			return false, fmt.Errorf("the process exited: %w", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+healthAddr+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: the poll goes on
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("not ready within %s: %w", ReadyTimeout, err)
	}
	return nil
}
