//go:build race

package sandbox_test

// raceEnabled: the race detector's shadow memory multiplies what the
// process holds, so RSS bounds do not hold under it.
const raceEnabled = true
