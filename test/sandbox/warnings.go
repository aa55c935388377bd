// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import "sync"

// WarningRecorder collects the warnings an API server returns; set it as a rest.Config's
// WarningHandler to assert that requests draw no deprecation or validation warnings.
type WarningRecorder struct {
	mu       sync.Mutex
	messages []string
}

// HandleWarningHeader records one warning.
func (w *WarningRecorder) HandleWarningHeader(_ int, _ string, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, message)
}

// Take returns and forgets the recorded warnings.
func (w *WarningRecorder) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.messages
	w.messages = nil
	return m
}
