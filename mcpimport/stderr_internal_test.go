package mcpimport

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestStderrLogger: one log entry per line, however the writes split it;
// a line longer than maxStderrLine is cut and the rest of it dropped; a
// last line without a newline is logged at flush.
func TestStderrLogger(t *testing.T) {
	var buf bytes.Buffer
	w := newStderrLogger(slog.New(slog.NewTextHandler(&buf, nil)), newStderrLimit())
	for _, chunk := range []string{"first li", "ne\nsecond\r\n", "\n", strings.Repeat("x", 3*maxStderrLine), "tail of the long line\nafter", " the long one"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	w.flush()
	var lines []string
	for _, entry := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		_, line, _ := strings.Cut(entry, "line=")
		lines = append(lines, line)
	}
	want := []string{`"first line"`, `second`, strings.Repeat("x", maxStderrLine) + "…", `"after the long one"`}
	if len(lines) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: %.80s, want %.80s", i, lines[i], want[i])
		}
	}
}
