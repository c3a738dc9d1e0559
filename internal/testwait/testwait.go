// Package testwait holds the one "eventually" helper of toolgate's tests:
// wait for something another goroutine or process will make true, failing
// the test if it does not happen in time. It imports "testing", so only
// _test.go files may import it (cmd/toolgate's TestBinaryHasNoTestCode
// checks that the binary does not).
package testwait

import (
	"testing"
	"time"
)

// pollInterval is how often Until asks again.
const pollInterval = 10 * time.Millisecond

// Until asks cond every few milliseconds until it returns true, and fails
// the test (t.Fatalf, naming what was awaited) if it has not within the
// timeout. Call it from the test's goroutine.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(pollInterval)
	}
}
