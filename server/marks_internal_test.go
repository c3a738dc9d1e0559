package server

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
	e.flushMarks() // the pending marks are gone now
	// Armed already: restoreMark arms no timer whose flush could take the
	// mark before this test looks at it.
	e.marks.mu.Lock()
	e.marks.armed = true
	e.marks.mu.Unlock()
	e.restoreMark("call-1", deliveryMark{first: time.Now(), count: 1})
	if got := e.takeMark("call-1"); got.count != 1 {
		t.Fatalf("restored mark = %+v, want one delivery", got)
	}
}
