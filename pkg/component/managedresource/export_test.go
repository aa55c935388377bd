// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package managedresource

// Compressions is the semaphore of Data, for tests that hold its slots.
var Compressions = compressions
