package mcpimport

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// maxStderrLine is the longest stderr line logged whole; a longer one is
// cut there (and the rest of it dropped), so that a server writing
// megabytes without a newline costs the gateway no more than this.
const maxStderrLine = 2 << 10

// A server's stderr lines are logged at most stderrLinesPerSecond, after a
// burst of stderrBurst (a stack trace, a chatty start); the lines past
// that are read and dropped, and counted in a summary entry logged before
// the next line that is let through, or when the process ends.
const (
	stderrLinesPerSecond = 10
	stderrBurst          = 100
)

// newStderrLimit is the rate limit of one server's stderr lines, shared by
// its processes one after another (a crash loop is limited too).
func newStderrLimit() *rate.Limiter {
	return rate.NewLimiter(stderrLinesPerSecond, stderrBurst)
}

// stderrLogger writes a command's stderr to the gateway's log, one log
// entry per line, within limit: at debug level until the server is
// online (what servers print as they start is noise), at info level
// after. Write never blocks on the log's account:
// the pipe is always drained.
type stderrLogger struct {
	log    *slog.Logger
	limit  *rate.Limiter
	redact func(string) string // each line, before it is logged; nil: none

	mu        sync.Mutex
	line      []byte
	truncated bool // the current line was cut; drop until its newline
	dropped   int  // lines dropped since the last summary
	// online: the server came online; until then its lines are start
	// noise, logged at debug level, the last maxStartLines of them kept
	// in start for the warning of a start that failed (startFailed).
	online bool
	start  []string
}

// maxStartLines is how many of a command's last stderr lines before it
// came online are kept to be shown at warning level if it never does.
const maxStartLines = 10

func newStderrLogger(log *slog.Logger, limit *rate.Limiter) *stderrLogger {
	return &stderrLogger{log: log, limit: limit}
}

// Write implements io.Writer.
func (w *stderrLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.truncated {
			room := maxStderrLine - len(w.line)
			if len(chunk) > room {
				w.line = append(w.line, chunk[:room]...)
				w.emitLocked(true)
				w.truncated = true
			} else {
				w.line = append(w.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !w.truncated {
			w.emitLocked(false)
		}
		w.truncated = false
		p = p[i+1:]
	}
	return n, nil
}

// flush logs a last line that had no newline, and how many lines were
// dropped since the last summary.
func (w *stderrLogger) flush() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 && !w.truncated {
		w.emitLocked(false)
	}
	w.summaryLocked()
}

// summaryLocked logs how many lines were dropped, if any.
func (w *stderrLogger) summaryLocked() {
	if w.dropped > 0 {
		w.log.Warn("MCP server stderr lines dropped", "dropped", w.dropped, "lines_per_second", stderrLinesPerSecond, "burst", stderrBurst)
		w.dropped = 0
	}
}

func (w *stderrLogger) emitLocked(cut bool) {
	line := strings.TrimRight(strings.ToValidUTF8(string(w.line), string(utf8.RuneError)), "\r")
	w.line = w.line[:0]
	if line == "" && !cut {
		return
	}
	if cut {
		line += "…"
	}
	entries := 1
	if w.dropped > 0 {
		entries = 2 // the summary first
	}
	if !w.limit.AllowN(time.Now(), entries) {
		w.dropped++
		return
	}
	w.summaryLocked()
	if w.redact != nil {
		line = w.redact(line)
	}
	if w.online {
		w.log.Info("MCP server stderr", "line", line)
		return
	}
	w.log.Debug("MCP server stderr", "line", line)
	if len(w.start) == maxStartLines {
		w.start = append(w.start[:0], w.start[1:]...)
	}
	w.start = append(w.start, line)
}

// cameOnline marks the end of the start: the lines from now on are
// logged at info level.
func (w *stderrLogger) cameOnline() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.online, w.start = true, nil
}

// startFailed logs, at warning level, the last lines the command wrote
// before it failed to come online (they were logged at debug level).
func (w *stderrLogger) startFailed() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.online && len(w.start) > 0 {
		w.log.Warn("MCP server stderr before it failed to start", "lines", w.start)
		w.start = nil
	}
}
