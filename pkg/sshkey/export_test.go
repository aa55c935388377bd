package sshkey

// MatchGlob exposes the wildcard matcher and its step count to the tests.
var MatchGlob = matchGlob
