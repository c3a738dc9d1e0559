package mcpimport

import (
	"bytes"
	"fmt"
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
	w.cameOnline()
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

// TestStderrStartNoise: what a command writes before it is online is
// logged at debug level, and only its last maxStartLines lines are shown
// at warning level if it fails to start; once online, its lines are
// logged at info level.
func TestStderrStartNoise(t *testing.T) {
	var buf bytes.Buffer
	w := newStderrLogger(slog.New(slog.NewTextHandler(&buf, nil)), newStderrLimit()) // info and up
	for i := range 25 {
		fmt.Fprintf(w, "starting %d\n", i)
	}
	if buf.Len() != 0 {
		t.Fatalf("start noise logged at info level:\n%s", buf.String())
	}
	w.startFailed()
	want := `level=WARN msg="MCP server stderr before it failed to start" lines="[starting 15 starting 16 starting 17 starting 18 starting 19 starting 20 starting 21 starting 22 starting 23 starting 24]"`
	if got := strings.TrimSpace(buf.String()); !strings.HasSuffix(got, want) {
		t.Fatalf("after a failed start: %s\nwant ...%s", got, want)
	}

	buf.Reset()
	w = newStderrLogger(slog.New(slog.NewTextHandler(&buf, nil)), newStderrLimit())
	fmt.Fprintln(w, "listening on stdio")
	w.cameOnline()
	w.startFailed() // not failed: nothing
	fmt.Fprintln(w, "error: disk full")
	if got := strings.TrimSpace(buf.String()); !strings.HasSuffix(got, `level=INFO msg="MCP server stderr" line="error: disk full"`) || strings.Contains(got, "listening") {
		t.Fatalf("once online: %s", got)
	}
}
