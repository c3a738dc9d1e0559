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
	e.markDelivered([]string{"call-1"}, time.Now())
	taken := e.takeMark("call-1")
	e.flushMarks()
	e.restoreMark("call-1", taken)
	if got := e.takeMark("call-1"); got.count != 1 {
		t.Fatalf("restored mark = %+v, want one delivery", got)
	}
}
