// Package testlog holds the log sink of toolgate's tests: a buffer the
// code under test writes its log to from any goroutine while the test
// reads it.
package testlog

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// LockedBuffer is a bytes.Buffer safe for writes from other goroutines
// (or a child process's output) and the test's reads at the same time.
// The zero value is an empty buffer ready to use.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it implements io.Writer.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the lines written so far that contain substr.
func (b *LockedBuffer) Lines(substr string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// Logger returns a logger writing text lines at level and above to b.
func (b *LockedBuffer) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: level}))
}
