package mcpserve

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// undeliveredInterval is how often, at most, the endpoint logs the
// list_changed notifications the SDK could not deliver.
const undeliveredInterval = time.Minute

// undeliveredLog is the SDK's log handler with its warnings of
// list_changed notifications no stream took gathered into one line per
// interval, with their count. The SDK warns once per MCP session per
// change when it cannot deliver one (a stateful session without a GET
// stream, which MCP allows, or one closing), so that a thousand such
// sessions and a client flipping its tools would write thousands of lines
// a second. Other records pass as they are.
type undeliveredLog struct {
	slog.Handler
	tally *undeliveredTally
}

// undeliveredTally is what the handlers made from one undeliveredLog
// (WithAttrs, WithGroup) share.
type undeliveredTally struct {
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	count   int       // gathered since the last line
	last    time.Time // when the last line was written
	lastErr string
}

func newUndeliveredLog(h slog.Handler, interval time.Duration, now func() time.Time) undeliveredLog {
	return undeliveredLog{Handler: h, tally: &undeliveredTally{interval: interval, now: now}}
}

// isUndelivered reports whether an SDK record is the warning of a
// list_changed notification it could not deliver ("calling
// notifications/tools/list_changed: rejected by transport: …").
func isUndelivered(r slog.Record) bool {
	return r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "calling notifications/") &&
		strings.Contains(r.Message, "list_changed")
}

// Handle implements slog.Handler.
func (h undeliveredLog) Handle(ctx context.Context, r slog.Record) error {
	if !isUndelivered(r) {
		return h.Handler.Handle(ctx, r)
	}
	t := h.tally
	t.mu.Lock()
	t.count++
	t.lastErr = r.Message
	now := t.now()
	if !t.last.IsZero() && now.Sub(t.last) < t.interval {
		t.mu.Unlock()
		return nil
	}
	n, why := t.count, t.lastErr
	t.count, t.last = 0, now
	t.mu.Unlock()
	if !h.Handler.Enabled(ctx, slog.LevelInfo) {
		return nil
	}
	line := slog.NewRecord(now, slog.LevelInfo,
		"MCP: list_changed notifications not delivered (MCP sessions without a GET stream, or closing); logged at most once per interval", 0)
	line.AddAttrs(slog.Int("count", n), slog.Duration("interval", t.interval), slog.String("last", why))
	return h.Handler.Handle(ctx, line)
}

// WithAttrs implements slog.Handler.
func (h undeliveredLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return undeliveredLog{h.Handler.WithAttrs(attrs), h.tally}
}

// WithGroup implements slog.Handler.
func (h undeliveredLog) WithGroup(name string) slog.Handler {
	return undeliveredLog{h.Handler.WithGroup(name), h.tally}
}
