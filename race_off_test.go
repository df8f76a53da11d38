//go:build !race

package main

// raceEnabled says this test binary has the race detector.
const raceEnabled = false
