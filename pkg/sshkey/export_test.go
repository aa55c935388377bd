// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey

// MatchGlob exposes the wildcard matcher and its step count to the tests.
var MatchGlob = matchGlob
