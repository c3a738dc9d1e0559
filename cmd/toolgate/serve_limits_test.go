package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/server"
)

// abuseEnv lists the abuse limits' environment variables.
var abuseEnv = []string{"TOOLGATE_TRUSTED_PROXIES", "TOOLGATE_ADDRESS_SESSION_RATE", "TOOLGATE_ADDRESS_SESSION_BURST",
	"TOOLGATE_MAX_RUNS_PER_SESSION", "TOOLGATE_RUN_RATE", "TOOLGATE_RUN_BURST", "TOOLGATE_MAX_OPEN_CALLS_PER_SESSION",
	"TOOLGATE_ADDRESS_RUN_RATE", "TOOLGATE_ADDRESS_RUN_BURST", "TOOLGATE_MAX_SESSION_RUNS", "TOOLGATE_MAX_RUNS_PER_ADDRESS",
	"TOOLGATE_MAX_RUN_INPUT_BYTES", "TOOLGATE_MAX_CONNECTIONS_PER_ADDRESS"}

// TestServeAbuseLimitFlags: the limits default to DefaultConfig's; each
// comes from its flag or variable; 0 disables one (a negative value in the
// Config); a trusted proxy that is not an address or prefix is refused.
func TestServeAbuseLimitFlags(t *testing.T) {
	for _, env := range abuseEnv {
		t.Setenv(env, "")
		os.Unsetenv(env)
	}
	def := server.DefaultConfig()
	cfg, _, err := serveFlags(nil)
	if err != nil || cfg.SessionRate != def.SessionRate || cfg.SessionBurst != def.SessionBurst ||
		cfg.MaxRunsPerSession != def.MaxRunsPerSession || cfg.RunRate != def.RunRate || cfg.RunBurst != def.RunBurst ||
		cfg.MaxOpenCallsPerSession != def.MaxOpenCallsPerSession || cfg.TrustedProxies != nil ||
		cfg.AddressRunRate != def.AddressRunRate || cfg.AddressRunBurst != def.AddressRunBurst || cfg.MaxSessionRuns != def.MaxSessionRuns ||
		cfg.MaxRunsPerAddress != 0 || cfg.MaxRunInputBytes != 8<<20 || cfg.MaxConnectionsPerAddress != 0 {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	cfg, _, err = serveFlags([]string{"--max-runs-per-address", "2", "--max-run-input-bytes", "0", "--max-connections-per-address", "-5"})
	if err != nil || cfg.MaxRunsPerAddress != 2 || cfg.MaxRunInputBytes >= 0 || cfg.MaxConnectionsPerAddress != -1 {
		t.Fatalf("runs per address 2, run input disabled, connections per address disabled: %+v, %v", cfg, err)
	}
	t.Setenv("TOOLGATE_MAX_RUN_INPUT_BYTES", "65536")
	t.Setenv("TOOLGATE_MAX_CONNECTIONS_PER_ADDRESS", "100")
	if cfg, _, err = serveFlags(nil); err != nil || cfg.MaxRunInputBytes != 65536 || cfg.MaxConnectionsPerAddress != 100 {
		t.Fatalf("from the environment: %+v, %v", cfg, err)
	}
	os.Unsetenv("TOOLGATE_MAX_RUN_INPUT_BYTES")
	os.Unsetenv("TOOLGATE_MAX_CONNECTIONS_PER_ADDRESS")

	cfg, _, err = serveFlags([]string{"--address-session-rate", "0.5", "--address-session-burst", "300", "--trusted-proxies", "10.0.0.0/8, 127.0.0.1",
		"--max-runs-per-session", "1", "--run-rate", "0", "--run-burst", "3", "--max-open-calls-per-session", "0",
		"--address-run-rate", "0.25", "--address-run-burst", "0", "--max-runs-all-sessions", "8"})
	if err != nil || cfg.SessionRate != 0.5 || cfg.SessionBurst != 300 || !slices.Equal(cfg.TrustedProxies, []string{"10.0.0.0/8", "127.0.0.1"}) ||
		cfg.MaxRunsPerSession != 1 || cfg.RunRate >= 0 || cfg.RunBurst != 3 || cfg.MaxOpenCallsPerSession >= 0 ||
		cfg.AddressRunRate != 0.25 || cfg.AddressRunBurst >= 0 || cfg.MaxSessionRuns != 8 {
		t.Fatalf("from flags (run rate and open calls disabled): %+v, %v", cfg, err)
	}

	t.Setenv("TOOLGATE_ADDRESS_SESSION_RATE", "0")
	t.Setenv("TOOLGATE_MAX_OPEN_CALLS_PER_SESSION", "50")
	t.Setenv("TOOLGATE_TRUSTED_PROXIES", "fd00::/8")
	t.Setenv("TOOLGATE_MAX_SESSION_RUNS", "0")
	cfg, _, err = serveFlags(nil)
	if err != nil || cfg.SessionRate >= 0 || cfg.MaxOpenCallsPerSession != 50 || !slices.Equal(cfg.TrustedProxies, []string{"fd00::/8"}) ||
		cfg.MaxSessionRuns >= 0 {
		t.Fatalf("from the environment: %+v, %v", cfg, err)
	}

	if _, _, err := serveFlags([]string{"--trusted-proxies", "proxy.internal"}); err == nil || !strings.Contains(err.Error(), "trusted-proxies") {
		t.Errorf("a trusted proxy that is a name: %v", err)
	}
	t.Setenv("TOOLGATE_RUN_RATE", "fast")
	if _, _, err := serveFlags(nil); err == nil || !strings.Contains(err.Error(), "TOOLGATE_RUN_RATE") {
		t.Errorf("TOOLGATE_RUN_RATE=fast: %v", err)
	}
}
