//go:build !race

package sandbox_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
