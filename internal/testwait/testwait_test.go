package testwait

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recordingT is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recordingT struct {
	testing.TB
	failure string
}

func (r *recordingT) Helper() {}

func (r *recordingT) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Until on its own goroutine, so that a Fatalf ends only that.
func run(timeout time.Duration, what string, cond func() bool) (failure string) {
	r := &recordingT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(r, timeout, what, cond)
	}()
	<-done
	return r.failure
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	asked := 0
	if failure := run(5*time.Second, "the third ask", func() bool { asked++; return asked == 3 }); failure != "" {
		t.Fatalf("failed: %s", failure)
	}
	if asked != 3 {
		t.Errorf("cond asked %d times, want 3 (asked until it held, then no more)", asked)
	}
}

func TestUntilFailsNamingWhatItAwaited(t *testing.T) {
	start := time.Now()
	failure := run(50*time.Millisecond, "the impossible", func() bool { return false })
	if !strings.Contains(failure, "waiting for the impossible") {
		t.Errorf("failure %q does not name what was awaited", failure)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("gave up after %s, before the 50ms timeout", waited)
	}
}
