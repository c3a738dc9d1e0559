package mcpimport

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// hideSecret is a Redact that replaces "hunter2" in every string of a
// JSON value.
func hideSecret(v json.RawMessage) json.RawMessage {
	return json.RawMessage(strings.ReplaceAll(string(v), "hunter2", "[REDACTED]"))
}

// A call's error (message and details) and a command's stderr lines pass
// Options.Redact; without one they are as they were.
func TestServerTextRedacted(t *testing.T) {
	s := &Server{cfg: Config{Name: "x"}, opts: Options{Redact: hideSecret}}
	err := s.redactError(toolgate.Errorf(CodeToolError, "login hunter2 failed").WithDetails(map[string]any{"content": json.RawMessage(`[{"text":"hunter2"}]`)}))
	te, _ := err.(*toolgate.Error)
	if te == nil || te.Code != CodeToolError || te.Message != "login [REDACTED] failed" {
		t.Fatalf("redacted error: %#v", err)
	}
	if d, _ := json.Marshal(te.Details); strings.Contains(string(d), "hunter2") || !strings.Contains(string(d), "[REDACTED]") {
		t.Errorf("details: %s", d)
	}
	if s.redactError(nil) != nil {
		t.Error("nil became an error")
	}
	plain := &Server{cfg: Config{Name: "x"}}
	if got := plain.redactText("hunter2"); got != "hunter2" {
		t.Errorf("without Redact: %q", got)
	}

	var buf bytes.Buffer
	w := newStderrLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), newStderrLimit())
	w.redact = s.redactText
	w.Write([]byte("token=hunter2\n"))
	w.flush()
	w.startFailed() // the start's lines again, at warning level
	if strings.Contains(buf.String(), "hunter2") || strings.Count(buf.String(), "[REDACTED]") != 2 {
		t.Errorf("stderr logged: %s", buf.String())
	}
}
