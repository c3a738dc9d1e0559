package mcpserve

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The undelivered list_changed warnings are one line per interval: the
// first at once, the next once the interval has passed, counting those
// gathered meanwhile; other records pass as they are.
func TestUndeliveredLogCounts(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	h := newUndeliveredLog(slog.NewTextHandler(&out, nil), time.Minute, func() time.Time { return now })
	log := slog.New(h).With("component", "sdk")
	warn := func() {
		log.Warn("calling notifications/tools/list_changed: rejected by transport: undelivered message: stream not connected or already closed")
	}
	warn()
	for range 99 {
		warn()
	}
	log.Warn("something else")
	now = now.Add(time.Minute)
	warn()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines; want 3:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], "count=1 ") || !strings.Contains(lines[0], "component=sdk") {
		t.Errorf("first line: %s; want count=1", lines[0])
	}
	if !strings.Contains(lines[1], `msg="something else"`) {
		t.Errorf("another warning: %s; want it as it is", lines[1])
	}
	if !strings.Contains(lines[2], "count=100 ") {
		t.Errorf("after the interval: %s; want count=100 (99 gathered, and this one)", lines[2])
	}
	if h.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("the handler enables what its base does not")
	}
}
