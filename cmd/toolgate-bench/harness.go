package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/toolgate/toolgate/internal/devcert"
)

// runHarness runs every figure for every system, round after round, then
// prints the table and writes results.json.
func runHarness(ctx context.Context, args []string) error {
	cfg, err := parseHarnessFlags(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	machine := readMachine(cfg.Note)
	tmp, err := os.MkdirTemp("", "toolgate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := buildGateway(ctx, tmp)
	if err != nil {
		return err
	}
	key := make([]byte, 16)
	rand.Read(key)
	agentKey := "tga_bench_" + hex.EncodeToString(key)
	c := newCollector()
	maxConc := slices.Max(cfg.Concurrency)

	if cfg.Only == "" {
		logf("in-process callers: starting gateways, baseline, floor and %d clients each", maxConc)
		if err := inProcessFigures(ctx, cfg, c, tmp, agentKey, maxConc); err != nil {
			return err
		}
		logf("callers over HTTP: starting the toolgate binary, the baseline and the floor as processes")
		if err := processFigures(ctx, cfg, c, bin, tmp, agentKey); err != nil {
			return err
		}
	}
	if (cfg.Only == "" && !cfg.NoNodes) || cfg.Only == "nodes" {
		if err := nodesFigures(ctx, cfg, c, bin, tmp, agentKey); err != nil {
			return fmt.Errorf("several nodes: %w", err)
		}
	}
	if cfg.Only == "" || cfg.Only == "idle" {
		if err := idleFigures(ctx, cfg, c, bin, tmp, agentKey); err != nil {
			return err
		}
	}
	for r := range cfg.Rounds {
		if cfg.Only != "" {
			break
		}
		logf("recovery, round %d: kill -9 with %d open calls over %d sessions", r+1, cfg.RecoveryCalls, cfg.RecoverySessions)
		dir := filepath.Join(tmp, fmt.Sprintf("recovery-%d", r))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		serving, delivered, err := recoveryTimes(ctx, bin, dir, agentKey, cfg.RecoverySessions, cfg.RecoveryCalls)
		if err != nil {
			return fmt.Errorf("recovery: %w", err)
		}
		c.add("", "recovery_serving_ms", float64(serving.Microseconds())/1e3)
		c.add("", "recovery_delivered_ms", float64(delivered.Microseconds())/1e3)
	}
	if err := writeResults(cfg.Out, c.results(machine, cfg)); err != nil {
		return err
	}
	c.printTable(os.Stdout, machine, cfg.Rounds)
	logf("wrote %s", cfg.Out)
	return nil
}

// idleFigures takes the memory per idle session, round after round: the
// baseline's WebSockets, and toolgate's streams held each way of
// idleTransports (the HTTPS ones with a certificate made for this run).
func idleFigures(ctx context.Context, cfg *config, c *collector, bin, tmp, agentKey string) error {
	certDir := filepath.Join(tmp, "tls")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return err
	}
	certs, err := devcert.Write(certDir)
	if err != nil {
		return err
	}
	type way struct{ system, transport string }
	ways := []way{{sysBaseline, ""}}
	for _, tr := range idleTransports {
		ways = append(ways, way{sysSSE, tr})
	}
	for r := range cfg.Rounds {
		for i, w := range ways {
			logf("idle sessions, round %d: %s %s holding %d", r+1, w.system, w.transport, cfg.IdleSessions)
			db := filepath.Join(tmp, fmt.Sprintf("idle-%d-%d.db", r, i))
			b, err := idleBytes(ctx, w.system, w.transport, bin, db, agentKey, certs, cfg.IdleSessions, cfg.IdleSettle)
			if err != nil {
				return fmt.Errorf("idle sessions (%s %s): %w", w.system, w.transport, err)
			}
			if w.system == sysBaseline {
				c.add(sysBaseline, "idle_session_bytes", b)
				continue
			}
			c.add(sysSSE, idleMetric(w.transport), b)
			c.add("", idleMetric(w.transport), b)
		}
	}
	return nil
}

// inProcessFigures takes the round trips and calls per second with callers
// in this process, next to the gateways and the baseline.
func inProcessFigures(ctx context.Context, cfg *config, c *collector, tmp, agentKey string, clients int) error {
	ts, err := inProcessTargets(ctx, tmp, agentKey, clients)
	if err != nil {
		return err
	}
	defer stopAll(ts)
	if err := roundTripRounds(ctx, cfg, c, ts, "roundtrip", "in-process"); err != nil {
		return err
	}
	for r := range cfg.Rounds {
		for _, conc := range cfg.Concurrency {
			for _, t := range ts {
				err := measureLoad(ctx, cfg, c, t, r, conc, "", "in-process", func(l load) string {
					c.addCPU(t, l, "", conc)
					return l.cpuText()
				})
				if err != nil {
					return err
				}
			}
		}
	}
	if cfg.CPUProfile != "" {
		return profileLoad(ctx, cfg, ts[0])
	}
	return nil
}

// roundTripRounds takes the one-call-at-a-time round trips of every
// target, cfg.Rounds times, as the figures prefix_p50_us and prefix_p99_us.
func roundTripRounds(ctx context.Context, cfg *config, c *collector, ts []*target, prefix, label string) error {
	for r := range cfg.Rounds {
		for _, t := range ts {
			p50, p99, err := roundTrip(ctx, t, cfg.RoundTripCalls, cfg.Warmup)
			if err != nil {
				return err
			}
			c.add(t.system, prefix+"_p50_us", p50)
			c.add(t.system, prefix+"_p99_us", p99)
			logf("round %d %s round trip %-18s p50 %7.0f µs  p99 %7.0f µs", r+1, label, t.system, p50, p99)
		}
	}
	return nil
}

// measureLoad takes the calls per second of t with conc callers as the
// figure <prefix>calls_per_s_<conc>, with the load's round trips, and logs
// them as round r of label. more, when set, records figures of its own
// from the load and returns what the log line adds.
func measureLoad(ctx context.Context, cfg *config, c *collector, t *target, r, conc int, prefix, label string, more func(load) string) error {
	l, err := throughput(ctx, t, conc, cfg.LoadWarmup, cfg.LoadDuration)
	if err != nil {
		return err
	}
	c.add(t.system, fmt.Sprintf("%scalls_per_s_%d", prefix, conc), l.callsPerSec)
	c.addLoadLatency(t, l, prefix, conc)
	extra := ""
	if more != nil {
		extra = more(l)
	}
	logf("round %d %s %3d callers %-18s %8.0f calls/s  p50 %5.0f p99 %6.0f µs%s", r+1, label, conc, t.system, l.callsPerSec, l.p50, l.p99, extra)
	return nil
}

// profileLoad writes a CPU profile of this process (the in-process
// gateway and its callers; the clients run elsewhere) under the load of
// the first concurrency. It is a run of its own, not counted in a figure.
func profileLoad(ctx context.Context, cfg *config, t *target) error {
	f, err := os.Create(cfg.CPUProfile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	l, err := throughput(ctx, t, cfg.Concurrency[0], cfg.LoadWarmup, max(cfg.LoadDuration, 5*time.Second))
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	logf("profiled %s with %d callers: %.0f calls/s, profile in %s", t.system, cfg.Concurrency[0], l.callsPerSec, cfg.CPUProfile)
	return nil
}

// processFigures takes the round trips over POST /v1/calls, the calls per
// second over HTTP at the first concurrency and, from the gateway's
// /metrics under that load, the database transactions per call.
func processFigures(ctx context.Context, cfg *config, c *collector, bin, tmp, agentKey string) error {
	conc := cfg.Concurrency[0]
	ts, err := processTargets(ctx, bin, tmp, agentKey, conc)
	if err != nil {
		return err
	}
	defer stopAll(ts)
	if err := roundTripRounds(ctx, cfg, c, ts, "http_roundtrip", "HTTP"); err != nil {
		return err
	}
	for r := range cfg.Rounds {
		for _, t := range ts {
			err := measureLoad(ctx, cfg, c, t, r, conc, "http_", "HTTP", func(l load) string {
				c.addCPU(t, l, "http_", conc)
				if t.transactions == nil {
					return l.cpuText()
				}
				c.add(t.system, "db_transactions_per_call", l.txPerCall)
				if t.system == sysSSE {
					c.add("", "db_transactions_per_call", l.txPerCall)
				}
				return l.cpuText() + fmt.Sprintf("  %.3f db transactions/call", l.txPerCall)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// logf reports progress on standard error.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
