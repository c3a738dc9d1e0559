package engine

import (
	"testing"
	"time"
)

// TestRestoreMarkAfterFlush: an answer that did not record its call's
// deliveries puts them back even when a flush emptied the pending marks
// in between (the map is gone then, and writing to it panicked).
func TestRestoreMarkAfterFlush(t *testing.T) {
	srv, _ := serveWithTool(t, nil, "echo")
	e := srv.Engine
	e.core.marks.flush() // the pending marks are gone now
	// Armed already: restore arms no timer whose flush could take the
	// mark before this test looks at it.
	e.core.marks.mu.Lock()
	e.core.marks.armed = true
	e.core.marks.mu.Unlock()
	e.core.marks.restore("call-1", deliveryMark{first: time.Now(), count: 1})
	if got := e.core.marks.take("call-1"); got.count != 1 {
		t.Fatalf("restored mark = %+v, want one delivery", got)
	}
}
