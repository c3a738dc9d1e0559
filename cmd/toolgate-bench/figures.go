package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/toolgate/toolgate/internal/devcert"
)

// roundTrip makes warmup calls, then calls one at a time to session 0 and
// returns the 50th and 99th percentiles in microseconds.
func roundTrip(ctx context.Context, t *target, calls, warmup int) (p50, p99 float64, err error) {
	for range warmup {
		if err := t.call(ctx, 0); err != nil {
			return 0, 0, fmt.Errorf("%s round trip: %w", t.system, err)
		}
	}
	d := make([]time.Duration, calls)
	for i := range d {
		start := time.Now()
		if err := t.call(ctx, 0); err != nil {
			return 0, 0, fmt.Errorf("%s round trip: %w", t.system, err)
		}
		d[i] = time.Since(start)
	}
	return micros(percentile(d, 50)), micros(percentile(d, 99)), nil
}

// percentile returns the p-th percentile (nearest rank) of d.
func percentile(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := (p*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// load is what a throughput run measured.
type load struct {
	callsPerSec float64
	calls       int64
	txPerCall   float64 // 0 when the system has no database
	// cpuPerCall is the CPU time each measured process spent per call, in
	// microseconds, by role.
	cpuPerCall map[string]float64
	// p50, p99 are the round trips, in microseconds, of the calls that
	// ended within the measured time: the latency under this load.
	p50, p99 float64
}

// timedCall is one call of a load: when it ended, as the time since the
// load began, and how long it took. It holds no pointer, so the many
// kept during a load cost the garbage collector nothing to scan.
type timedCall struct {
	end, took time.Duration
}

// throughput runs conc callers, caller i calling session i in a loop, for
// warmup and then dur, and counts the calls that completed during dur.
func throughput(ctx context.Context, t *target, conc int, warmup, dur time.Duration) (load, error) {
	if conc > len(t.sessions) {
		return load{}, fmt.Errorf("%s has %d clients, %d callers asked for", t.system, len(t.sessions), conc)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var done atomic.Int64
	var stop atomic.Bool
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	base := time.Now()
	timed := make([][]timedCall, conc) // per caller, so no lock is shared
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := time.Since(base)
				if err := t.call(ctx, i); err != nil {
					if ctx.Err() == nil || !stop.Load() {
						errOnce.Do(func() { firstErr = err; stop.Store(true); cancel() })
					}
					return
				}
				end := time.Since(base)
				timed[i] = append(timed[i], timedCall{end, end - start})
				done.Add(1)
			}
		}()
	}
	// mark reads what a load counts at one end of its measured window. Both
	// ends read the same things in the same order, so that each count
	// covers a window as long as the calls' and nearly at the same place:
	// the transactions (an HTTP request to a busy gateway, milliseconds),
	// then the CPU times, then the calls and the time.
	type mark struct {
		tx    float64
		cpu   []time.Duration
		calls int64
		at    time.Duration // since base
	}
	read := func() (m mark, err error) {
		if m.tx, err = t.readTransactions(ctx); err != nil {
			return m, err
		}
		if m.cpu, err = readCPU(t.cpu); err != nil {
			return m, err
		}
		m.calls, m.at = done.Load(), time.Since(base)
		return m, nil
	}
	var first, last mark
	var res load
	err := func() error {
		if !sleepCtx(ctx, warmup) {
			return nil
		}
		var err error
		if first, err = read(); err != nil {
			return err
		}
		if !sleepCtx(ctx, dur) {
			return nil
		}
		if last, err = read(); err != nil {
			return err
		}
		res.calls = last.calls - first.calls
		res.callsPerSec = float64(res.calls) / (last.at - first.at).Seconds()
		if res.calls > 0 && t.transactions != nil {
			res.txPerCall = (last.tx - first.tx) / float64(res.calls)
		}
		if res.calls > 0 {
			res.cpuPerCall = map[string]float64{}
			for i, m := range t.cpu {
				res.cpuPerCall[m.role] = micros(last.cpu[i]-first.cpu[i]) / float64(res.calls)
			}
		}
		return nil
	}()
	stop.Store(true)
	wg.Wait()
	if firstErr != nil {
		return load{}, fmt.Errorf("%s with %d callers: %w", t.system, conc, firstErr)
	}
	if err != nil {
		return load{}, err
	}
	if ctx.Err() != nil {
		return load{}, ctx.Err()
	}
	res.p50, res.p99 = windowLatency(timed, first.at, last.at)
	return res, nil
}

// windowLatency returns the p50 and p99, in microseconds, of the calls
// that ended between t0 and t1, both included (0, 0 when none did).
func windowLatency(timed [][]timedCall, t0, t1 time.Duration) (p50, p99 float64) {
	var d []time.Duration
	for _, calls := range timed {
		for _, c := range calls {
			if c.end >= t0 && c.end <= t1 {
				d = append(d, c.took)
			}
		}
	}
	if len(d) == 0 {
		return 0, 0
	}
	return micros(percentile(d, 50)), micros(percentile(d, 99))
}

// sleepCtx sleeps d unless ctx ends first; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// idleBytes measures the resident memory a server process gains holding n
// idle sessions: VmRSS once it serves, then with every session connected
// (after settle), divided by n. system is toolgate_sse (the real binary, a
// fresh database, its streams held as transport says — over HTTPS with
// certs for every transport but h1) or websocket_baseline (its own
// process, plain WebSocket clients).
func idleBytes(ctx context.Context, system, transport, bin, db, agentKey string, certs devcert.Files, n int, settle time.Duration) (float64, error) {
	var pid int
	var url string
	holderArgs := []string{"idle", "--system", system, "--n", strconv.Itoa(n)}
	switch system {
	case sysSSE:
		var extra []string
		if idleOverTLS(transport) {
			extra = []string{"--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile}
			holderArgs = append(holderArgs, "--ca", certs.CAFile)
		}
		holderArgs = append(holderArgs, "--transport", transport)
		g, err := startGatewayProc(ctx, bin, db, agentKey, "127.0.0.1:0", extra...)
		if err != nil {
			return 0, err
		}
		defer g.kill()
		pid, url = g.proc.pid(), g.url
	case sysBaseline:
		bp, err := selfChild("serve-baseline", "serve-baseline", "--agent-key", agentKey)
		if err != nil {
			return 0, err
		}
		defer bp.stop()
		if url, err = bp.expect(ctx, "SERVING ", 30*time.Second); err != nil {
			return 0, err
		}
		pid = bp.pid()
	default:
		return 0, fmt.Errorf("no idle figure for %s", system)
	}
	health := newAPIClient(1)
	if strings.HasPrefix(url, "https://") {
		health = newTLSAPIClient(1, certs.Roots)
	}
	if _, err := waitHealthy(ctx, health, url, 10*time.Millisecond, 30*time.Second); err != nil {
		return 0, err
	}
	health.CloseIdleConnections()
	sleepCtx(ctx, settle)
	before, err := vmRSS(pid)
	if err != nil {
		return 0, err
	}
	holder, err := selfChild("idle "+system+" "+transport, append(holderArgs, "--url", url)...)
	if err != nil {
		return 0, err
	}
	defer holder.stop()
	if _, err := holder.expect(ctx, "READY ", 10*time.Minute); err != nil {
		return 0, err
	}
	sleepCtx(ctx, settle)
	after, err := vmRSS(pid)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

// recoveryTimes starts the real binary on a fresh database, opens
// sessions, creates calls open calls spread over them (each delivered to
// its stream, none answered), kills the gateway with SIGKILL and starts it
// again on the same database and address. It returns the time from that
// start until /healthz answers 200, and until every open call has been
// delivered again to its reconnected client.
func recoveryTimes(ctx context.Context, bin, tmp, agentKey string, sessions, calls int) (serving, delivered time.Duration, err error) {
	g, err := startGatewayProc(ctx, bin, filepath.Join(tmp, "recovery.db"), agentKey, "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer g.kill()
	holder, err := selfChild("recovery clients", "recovery", "--url", g.url, "--sessions", strconv.Itoa(sessions), "--calls", strconv.Itoa(calls))
	if err != nil {
		return 0, 0, err
	}
	defer holder.stop()
	line, err := holder.expect(ctx, "READY ", 10*time.Minute)
	if err != nil {
		return 0, 0, err
	}
	var ready struct {
		Sessions []string `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		return 0, 0, err
	}
	client := newAPIClient(64)
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(64)
	for i := range calls {
		eg.Go(func() error {
			wait := false
			body := callRequest{SessionID: ready.Sessions[i%len(ready.Sessions)], Tool: echoTool, Args: benchArgs, TimeoutMS: int64((10 * time.Minute) / time.Millisecond), Wait: &wait}
			return postJSON(ectx, client, g.url+"/v1/calls", agentKey, body, nil)
		})
	}
	if err := eg.Wait(); err != nil {
		return 0, 0, fmt.Errorf("creating open calls: %w", err)
	}
	if _, err := holder.expect(ctx, "FIRST ", 5*time.Minute); err != nil {
		return 0, 0, err
	}
	g.kill()
	health := newAPIClient(1)
	start := time.Now()
	healthy := make(chan error, 1)
	var servingAt time.Time
	go func() {
		var err error
		servingAt, err = waitHealthy(ctx, health, g.url, 2*time.Millisecond, 2*time.Minute)
		healthy <- err
	}()
	if err := g.start(ctx, g.addr()); err != nil {
		return 0, 0, fmt.Errorf("restart after kill: %w", err)
	}
	if err := <-healthy; err != nil {
		return 0, 0, err
	}
	line, err = holder.expect(ctx, "DELIVERED ", 5*time.Minute)
	if err != nil {
		return 0, 0, err
	}
	ns, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	deliveredAt := time.Unix(0, ns)
	if deliveredAt.Before(start) {
		return 0, 0, errors.New("calls delivered again before the restart: the clients reconnected to something else")
	}
	return servingAt.Sub(start), deliveredAt.Sub(start), nil
}

// addCPU records a load's CPU time per call of each process, as
// <prefix><role>_cpu_us_per_call_<conc>.
func (c *collector) addCPU(t *target, l load, prefix string, conc int) {
	for _, m := range t.cpu {
		if v, ok := l.cpuPerCall[m.role]; ok {
			c.add(t.system, fmt.Sprintf("%s%s_cpu_us_per_call_%d", prefix, m.role, conc), v)
		}
	}
}

// cpuText is the CPU per call of a load for the progress log.
func (l load) cpuText() string {
	var b strings.Builder
	for _, role := range []string{roleGateway, roleClient, roleCaller} {
		if v, ok := l.cpuPerCall[role]; ok {
			fmt.Fprintf(&b, "  %s %.0f", role, v)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return b.String() + " µs CPU/call"
}

// addLoadLatency records a load's round trips, as
// <prefix>load_p50_us_<conc> and <prefix>load_p99_us_<conc>.
func (c *collector) addLoadLatency(t *target, l load, prefix string, conc int) {
	if l.calls == 0 {
		return
	}
	c.add(t.system, fmt.Sprintf("%sload_p50_us_%d", prefix, conc), l.p50)
	c.add(t.system, fmt.Sprintf("%sload_p99_us_%d", prefix, conc), l.p99)
}
