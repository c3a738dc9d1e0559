package mcpimport

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxStderrLine is the longest stderr line logged whole; a longer one is
// cut there (and the rest of it dropped), so that a server writing
// megabytes without a newline costs the gateway no more than this.
const maxStderrLine = 2 << 10

// stderrLogger writes a command's stderr to the gateway's log, one log
// entry per line.
type stderrLogger struct {
	log *slog.Logger

	mu        sync.Mutex
	line      []byte
	truncated bool // the current line was cut; drop until its newline
}

func newStderrLogger(log *slog.Logger) *stderrLogger {
	return &stderrLogger{log: log}
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

// flush logs a last line that had no newline.
func (w *stderrLogger) flush() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 && !w.truncated {
		w.emitLocked(false)
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
	w.log.Info("MCP server stderr", "line", line)
}
