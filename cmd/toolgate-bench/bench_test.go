package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/cputime"
	"github.com/toolgate/toolgate/pgtest"
)

// TestHarnessEndToEnd builds toolgate-bench and runs it at a tiny scale —
// every system, every figure, every process it starts — and checks that
// results.json holds every figure as a positive number.
func TestHarnessEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole harness (about 30 s)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "toolgate-bench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	args := []string{"--rounds", "2", "--roundtrip-calls", "40", "--warmup", "10",
		"--concurrency", "4,8", "--load-warmup", "100ms", "--load-duration", "300ms",
		"--idle-sessions", "200", "--idle-settle", "300ms", "--recovery-calls", "200", "--recovery-sessions", "20",
		"--commit-count-calls", "100", "--stats-settle", "1s",
		"--out", out, "--timeout", "140s"}
	// The several-nodes figures need PostgreSQL: left out where it is not
	// installed, unless it is required (see pgtest).
	_, missing := pgtest.BinDir()
	withNodes := missing == nil || pgtest.Required()
	if !withNodes {
		t.Logf("the several-nodes figures are left out: %v", missing)
		args = append(args, "--no-nodes")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	logs, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("toolgate-bench: %v\n%s", err, logs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("results.json: %v\n%s", err, b)
	}
	common := []string{"roundtrip_p50_us", "roundtrip_p99_us", "http_roundtrip_p50_us", "http_roundtrip_p99_us",
		"calls_per_s_4", "calls_per_s_8", "http_calls_per_s_4",
		"load_p50_us_4", "load_p99_us_8", "http_load_p50_us_4", "http_load_p99_us_4",
		"gateway_cpu_us_per_call_4", "gateway_cpu_us_per_call_8", "http_gateway_cpu_us_per_call_4", "http_caller_cpu_us_per_call_4"}
	withClients := append([]string{"client_cpu_us_per_call_4", "client_cpu_us_per_call_8", "http_client_cpu_us_per_call_4"}, common...)
	want := map[string][]string{
		sysSSE: append([]string{"db_transactions_per_call", "idle_session_bytes", "idle_session_bytes_h1_tls", "idle_session_bytes_h2",
			"idle_session_bytes_multi", "idle_session_bytes_multi_h2"}, withClients...),
		sysPoll:     append([]string{"db_transactions_per_call"}, withClients...),
		sysBaseline: append([]string{"idle_session_bytes"}, withClients...),
		sysFloor:    common,
	}
	nodes := []string{"nodes_roundtrip_p50_us", "nodes_roundtrip_p99_us", "nodes_calls_per_s_4", "nodes_load_p50_us_4", "nodes_load_p99_us_4"}
	nodeSystems := []string{sysNodesSQLite, sysNodesPG1, sysNodesPG3}
	if !withNodes {
		nodeSystems = nil
	}
	for _, sys := range nodeSystems {
		want[sys] = nodes
	}
	for sys, keys := range want {
		var figures map[string]float64
		if err := json.Unmarshal(res[sys], &figures); err != nil {
			t.Fatalf("%s: %v in %s", sys, err, res[sys])
		}
		for _, k := range keys {
			if v, ok := figures[k]; !ok || !(v > 0) {
				t.Errorf("%s.%s = %v (present %v), want a positive number", sys, k, v, ok)
			}
		}
	}
	// The commits per call are counted exactly on SQLite; on PostgreSQL a
	// settle of 1 s is too short for an exact count, so only its presence.
	for _, sys := range nodeSystems {
		var figures map[string]float64
		json.Unmarshal(res[sys], &figures)
		if v, ok := figures["nodes_db_commits_per_call"]; !ok || (sys == sysNodesSQLite && !(v > 0)) {
			t.Errorf("%s.nodes_db_commits_per_call = %v (present %v)", sys, v, ok)
		}
	}
	for _, k := range []string{"idle_session_bytes", "idle_session_bytes_h1_tls", "idle_session_bytes_h2", "idle_session_bytes_multi", "idle_session_bytes_multi_h2", "recovery_serving_ms", "recovery_delivered_ms", "db_transactions_per_call"} {
		var v float64
		if err := json.Unmarshal(res[k], &v); err != nil || !(v > 0) {
			t.Errorf("%s = %s, want a positive number", k, res[k])
		}
	}
	var m machineInfo
	if err := json.Unmarshal(res["machine"], &m); err != nil {
		t.Fatal(err)
	}
	if m.Cores < 1 || m.MemoryBytes <= 0 || m.CPUModel == "" || m.GoVersion == "" || m.Date == "" {
		t.Errorf("machine = %+v, want cores, memory, CPU model, Go version and date", m)
	}
	if t.Failed() {
		t.Logf("harness output:\n%s", logs)
	}
}

// TestPercentile checks the nearest-rank percentile the round trips use.
func TestPercentile(t *testing.T) {
	d := make([]time.Duration, 100)
	for i := range d {
		d[len(d)-1-i] = time.Duration(i+1) * time.Millisecond
	}
	if got := percentile(d, 50); got != 50*time.Millisecond {
		t.Errorf("p50 = %s, want 50ms", got)
	}
	if got := percentile(d, 99); got != 99*time.Millisecond {
		t.Errorf("p99 = %s, want 99ms", got)
	}
	if got := percentile(d[:1], 99); got != 100*time.Millisecond {
		t.Errorf("p99 of one = %s, want 100ms", got)
	}
}

// TestSummarize checks medians of odd and even counts, min and max.
func TestSummarize(t *testing.T) {
	s := summarize([]float64{5, 1, 3})
	if s.Median != 3 || s.Min != 1 || s.Max != 5 {
		t.Errorf("summarize(5,1,3) = %+v", s)
	}
	if s := summarize([]float64{4, 1, 3, 2}); s.Median != 2.5 {
		t.Errorf("median of 1..4 = %v, want 2.5", s.Median)
	}
}

// TestParseStatCPU reads utime and stime from /proc/PID/stat lines,
// including a command name with spaces and parentheses, and refuses
// malformed ones.
func TestParseStatCPU(t *testing.T) {
	line := "4242 (toolgate (x) y) S 1 4242 4242 0 -1 4194560 1529 0 0 0 250 37 0 0 20 0 9 0 1234 1000 200 0 0"
	got, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2870 * time.Millisecond; got != want {
		t.Errorf("CPU = %s, want %s (287 ticks)", got, want)
	}
	for _, bad := range []string{"", "4242 toolgate S 1", "4242 (toolgate) S 1 2 3", "4242 (t) S 1 4242 4242 0 -1 4194560 1529 0 0 0 x 37 0"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) took a malformed line", bad)
		}
	}
}

// TestProcessCPUAgreesWithGetrusage reads this process's CPU time from
// /proc after burning some, and checks it against getrusage: a wrong
// field or tick rate would be off by far more than the 10 ms ticks.
func TestProcessCPUAgreesWithGetrusage(t *testing.T) {
	// Work until this process has used 300 ms of CPU by getrusage (on a
	// busy machine that may take longer than 300 ms of wall time).
	x := uint64(1)
	for cputime.Process() < 300*time.Millisecond {
		for range 100000 {
			x = x*6364136223846793005 + 1
		}
	}
	burnSink = x
	fromProc, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	fromRusage := cputime.Process()
	if diff := fromRusage - fromProc; diff < -30*time.Millisecond || diff > 30*time.Millisecond {
		t.Errorf("/proc says %s, getrusage %s", fromProc, fromRusage)
	}
}

// burnSink keeps the busy loop of TestProcessCPUAgreesWithGetrusage.
var burnSink uint64

// TestWindowLatency takes the percentiles of the calls that ended inside
// the measured window only, from every caller.
func TestWindowLatency(t *testing.T) {
	t0 := 1000 * time.Millisecond
	t1 := t0 + time.Second
	ms := time.Millisecond
	timed := [][]timedCall{
		{{t0 - ms, 900 * ms}, {t0, 1 * ms}, {t0 + 10*ms, 2 * ms}},
		{{t0 + 500*ms, 3 * ms}, {t1, 4 * ms}, {t1 + ms, 800 * ms}},
	}
	p50, p99 := windowLatency(timed, t0, t1)
	if p50 != 2000 || p99 != 4000 {
		t.Errorf("p50, p99 = %v, %v µs; want 2000, 4000 (the calls ending before or after the window left out)", p50, p99)
	}
	if p50, p99 := windowLatency(timed, t1+time.Hour, t1+2*time.Hour); p50 != 0 || p99 != 0 {
		t.Errorf("an empty window gave %v, %v", p50, p99)
	}
}

// TestUnits names the unit of every kind of figure in the table.
func TestUnits(t *testing.T) {
	for metric, want := range map[string]string{
		"roundtrip_p50_us": "µs", "http_load_p99_us_64": "µs", "calls_per_s_64": "calls/s",
		"http_gateway_cpu_us_per_call_64": "µs CPU", "recovery_serving_ms": "ms", "idle_session_bytes": "bytes", "idle_session_bytes_h2": "bytes",
		"db_transactions_per_call": "",
	} {
		if got := unit(metric); got != want {
			t.Errorf("unit(%q) = %q, want %q", metric, got, want)
		}
	}
}
