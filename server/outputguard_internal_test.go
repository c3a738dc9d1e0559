package server

import (
	"log/slog"
	"strings"
	"testing"
)

// TestShortKeysWarnedAtStart: an agent key or client key shorter than 16
// characters gets a warning at start; long ones none.
func TestShortKeysWarnedAtStart(t *testing.T) {
	start := func(agentKey, clientKey string) string {
		cfg := testConfig(t)
		cfg.AgentKey, cfg.ClientKey = agentKey, clientKey
		logs := &lockedBuffer{}
		_, stop := startServerLogging(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
		stop()
		return logs.String()
	}
	logs := start("hunter2", "abc")
	if !strings.Contains(logs, "the agent key is shorter than 16 characters") || !strings.Contains(logs, "--agent-key") ||
		!strings.Contains(logs, "the client key is shorter than 16 characters: easy to guess, and too short for the safety step to redact it") {
		t.Errorf("short keys: logs = %s", logs)
	}
	if logs := start("tga_0123456789abcdefXYZ", "client-0123456789abcdef"); strings.Contains(logs, "shorter than 16") {
		t.Errorf("long keys: logs = %s", logs)
	}
}
