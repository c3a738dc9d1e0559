package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/server"
)

// abuseLimitFlags are the serve flags of the abuse limits (per client
// address, per session), read into a server.Config by apply. On the
// command line 0 (or less) disables a limit; in a Config that is a
// negative value, zero meaning the default.
type abuseLimitFlags struct {
	trustedProxies                                string
	sessionRate, runRate                          float64
	sessionBurst, maxRuns, runBurst, maxOpenCalls int64

	// The bounds on runs started with session tokens across sessions.
	addressRunRate                  float64
	addressRunBurst, maxSessionRuns int64
	// maxRunsPerAddress is 0 for the derived share, less to disable it.
	maxRunsPerAddress, maxRunInputBytes int64
}

// addAbuseLimitFlags registers the abuse-limit flags, their defaults
// taken from cfg (and the environment).
func addAbuseLimitFlags(f *envFlags, cfg server.Config) *abuseLimitFlags {
	a := &abuseLimitFlags{}
	f.str(&a.trustedProxies, "trusted-proxies", "TOOLGATE_TRUSTED_PROXIES", strings.Join(cfg.TrustedProxies, ","),
		"comma-separated reverse proxies (CIDR prefixes or addresses) whose X-Forwarded-For names the client address; from any other peer it is ignored")
	f.float(&a.sessionRate, "session-rate", "TOOLGATE_SESSION_RATE", cfg.SessionRate,
		"sessions one client address (IPv6: /64) may create per second, after its burst; 0 disables the limit")
	f.integer(&a.sessionBurst, "session-burst", "TOOLGATE_SESSION_BURST", int64(cfg.SessionBurst),
		"sessions one client address may create at once; 0 disables the limit")
	f.integer(&a.maxRuns, "max-runs-per-session", "TOOLGATE_MAX_RUNS_PER_SESSION", int64(cfg.MaxRunsPerSession),
		"runs a session's token may have in progress at once (the agent key's are not counted); 0 disables the limit")
	f.float(&a.runRate, "run-rate", "TOOLGATE_RUN_RATE", cfg.RunRate,
		"runs a session's token may start per second, after its burst; 0 disables the limit")
	f.integer(&a.runBurst, "run-burst", "TOOLGATE_RUN_BURST", int64(cfg.RunBurst),
		"runs a session's token may start at once; 0 disables the limit")
	f.integer(&a.maxOpenCalls, "max-open-calls-per-session", "TOOLGATE_MAX_OPEN_CALLS_PER_SESSION", int64(cfg.MaxOpenCallsPerSession),
		"calls not yet final one session may be the target of; 0 disables the limit")
	f.float(&a.addressRunRate, "address-run-rate", "TOOLGATE_ADDRESS_RUN_RATE", cfg.AddressRunRate,
		"runs one client address (IPv6: /64) may start with session tokens per second, whatever the session, after its burst; 0 disables the limit")
	f.integer(&a.addressRunBurst, "address-run-burst", "TOOLGATE_ADDRESS_RUN_BURST", int64(cfg.AddressRunBurst),
		"runs one client address may start with session tokens at once, whatever the session; 0 disables the limit")
	f.integer(&a.maxSessionRuns, "max-session-runs", "TOOLGATE_MAX_SESSION_RUNS", int64(cfg.MaxSessionRuns),
		"runs started with session tokens that may be in progress at once in the whole gateway (the agent key's are not counted); 0 disables the limit")
	f.integer(&a.maxRunsPerAddress, "max-runs-per-address", "TOOLGATE_MAX_RUNS_PER_ADDRESS", int64(cfg.MaxRunsPerAddress),
		"runs started with session tokens one client address (IPv6: /64) may have in progress at once, whatever the session; 0 derives it (a quarter of --max-session-runs, at least 1), -1 disables the limit")
	f.integer(&a.maxRunInputBytes, "max-run-input-bytes", "TOOLGATE_MAX_RUN_INPUT_BYTES", cfg.MaxRunInputBytes,
		"bytes one run may send its model in all, every request resending the conversation so far (MAX_INPUT past it; a run request over it alone is 413); 0 disables the limit")
	return a
}

// apply sets the parsed limits in cfg.
func (a *abuseLimitFlags) apply(cfg *server.Config) {
	cfg.TrustedProxies = nil
	for _, p := range strings.Split(a.trustedProxies, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.TrustedProxies = append(cfg.TrustedProxies, p)
		}
	}
	disabledIfNotPositive := func(v float64) float64 {
		if v <= 0 {
			return -1
		}
		return v
	}
	cfg.SessionRate = disabledIfNotPositive(a.sessionRate)
	cfg.SessionBurst = int(disabledIfNotPositive(float64(a.sessionBurst)))
	cfg.MaxRunsPerSession = int(disabledIfNotPositive(float64(a.maxRuns)))
	cfg.RunRate = disabledIfNotPositive(a.runRate)
	cfg.RunBurst = int(disabledIfNotPositive(float64(a.runBurst)))
	cfg.MaxOpenCallsPerSession = int(disabledIfNotPositive(float64(a.maxOpenCalls)))
	cfg.AddressRunRate = disabledIfNotPositive(a.addressRunRate)
	cfg.AddressRunBurst = int(disabledIfNotPositive(float64(a.addressRunBurst)))
	cfg.MaxSessionRuns = int(disabledIfNotPositive(float64(a.maxSessionRuns)))
	cfg.MaxRunsPerAddress = int(max(a.maxRunsPerAddress, -1))
	cfg.MaxRunInputBytes = int64(disabledIfNotPositive(float64(a.maxRunInputBytes)))
}

func (f *envFlags) float(p *float64, name, env string, def float64, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil && f.err == nil {
			f.err = fmt.Errorf("%s=%q: not a number", env, v)
		}
		if err == nil {
			def = n
		}
	}
	f.fs.Float64Var(p, name, def, usage+" (env "+env+")")
}
