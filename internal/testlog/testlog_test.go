package testlog_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/testlog"
)

// Writes from many goroutines while the test reads all arrive whole (the
// race detector checks the locking), and Lines finds those that match.
func TestLockedBuffer(t *testing.T) {
	var b testlog.LockedBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "writer=%d line=%d\n", i, j)
			}
		})
	}
	for range 10 {
		_ = b.String()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
	if got := b.Lines("writer=3 "); len(got) != 100 || got[0] != "writer=3 line=0" {
		t.Errorf("Lines(writer=3): %d lines, first %q; want 100 from line=0", len(got), got[:min(1, len(got))])
	}
}
