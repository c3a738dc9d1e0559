// Command toolgate-bench measures toolgate against an in-memory WebSocket
// gateway (the kind it replaces) and a bare HTTP echo floor, in one run on
// loopback: round trips, calls per second, memory per idle session,
// recovery after a kill, and database transactions per call; and the
// gateway on SQLite next to PostgreSQL on one node and on three. It
// prints a table and writes bench/results.json; BENCHMARKS.md explains the figures.
//
// With no subcommand it is the harness. It re-executes itself for the
// processes it starts: "clients" (SDK or WebSocket clients), "idle" (many
// idle sessions), "recovery" (streams that survive a gateway kill),
// "serve-baseline" and "serve-floor".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	args := os.Args[1:]
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	var err error
	switch sub {
	case "", "run":
		err = runHarness(ctx, args)
	case "clients":
		err = runClients(ctx, args)
	case "idle":
		err = runIdle(ctx, args)
	case "recovery":
		err = runRecovery(ctx, args)
	case "serve-baseline":
		fs := flag.NewFlagSet("toolgate-bench serve-baseline", flag.ContinueOnError)
		key := fs.String("agent-key", "", "caller secret for POST /v1/calls")
		if err = fs.Parse(args); err == nil {
			err = runServeCommand(ctx, newBaseline(*key).handler())
		}
	case "serve-floor":
		err = runServeCommand(ctx, floorHandler())
	default:
		err = fmt.Errorf("unknown subcommand %q", sub)
	}
	children.killAll()
	stop()
	if err != nil && err != flag.ErrHelp {
		fmt.Fprintf(os.Stderr, "toolgate-bench %s: %v\n", sub, err)
		os.Exit(1)
	}
}

// intList is a flag holding comma-separated whole numbers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	*l = nil
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive whole number", f)
		}
		*l = append(*l, n)
	}
	return nil
}

// config is what the harness is told by its flags; results.json records it.
type config struct {
	Rounds           int           `json:"rounds"`
	RoundTripCalls   int           `json:"roundtrip_calls"`
	Warmup           int           `json:"warmup_calls"`
	Concurrency      intList       `json:"concurrency"`
	LoadWarmup       time.Duration `json:"load_warmup_ns"`
	LoadDuration     time.Duration `json:"load_duration_ns"`
	IdleSessions     int           `json:"idle_sessions"`
	IdleSettle       time.Duration `json:"idle_settle_ns"`
	RecoveryCalls    int           `json:"recovery_calls"`
	RecoverySessions int           `json:"recovery_sessions"`
	CommitCountCalls int           `json:"commit_count_calls"`
	StatsSettle      time.Duration `json:"stats_settle_ns"`
	Only             string        `json:"only,omitempty"`
	NoNodes          bool          `json:"no_nodes,omitempty"`
	Out              string        `json:"-"`
	CPUProfile       string        `json:"-"`
	Note             string        `json:"-"`
	Timeout          time.Duration `json:"-"`
}

func parseHarnessFlags(args []string) (*config, error) {
	cfg := &config{Concurrency: intList{64, 256}}
	fs := flag.NewFlagSet("toolgate-bench", flag.ContinueOnError)
	fs.IntVar(&cfg.Rounds, "rounds", 5, "rounds of every figure (medians and min–max are over them)")
	fs.IntVar(&cfg.RoundTripCalls, "roundtrip-calls", 2000, "calls, one at a time, per round-trip round")
	fs.IntVar(&cfg.Warmup, "warmup", 200, "calls before each round-trip round")
	fs.Var(&cfg.Concurrency, "concurrency", "concurrent clients and callers for calls/s, comma-separated (the first also gives the HTTP calls/s and the transactions per call)")
	fs.DurationVar(&cfg.LoadWarmup, "load-warmup", 500*time.Millisecond, "load before each calls/s measurement")
	fs.DurationVar(&cfg.LoadDuration, "load-duration", 3*time.Second, "length of each calls/s measurement")
	fs.IntVar(&cfg.IdleSessions, "idle-sessions", 10000, "idle SSE sessions held for the memory figures")
	fs.DurationVar(&cfg.IdleSettle, "idle-settle", time.Second, "wait before each memory reading of the idle figures")
	fs.IntVar(&cfg.RecoveryCalls, "recovery-calls", 10000, "open calls when the gateway is killed")
	fs.IntVar(&cfg.RecoverySessions, "recovery-sessions", 1000, "sessions the open calls are spread over")
	fs.IntVar(&cfg.CommitCountCalls, "commit-count-calls", 1000, "calls the database commits per call are counted over (several-nodes figures)")
	fs.DurationVar(&cfg.StatsSettle, "stats-settle", 11*time.Second, "wait before each reading of PostgreSQL's commit count (an idle backend reports within 10 s)")
	fs.StringVar(&cfg.Only, "only", "", `"idle" takes the idle-session figures alone (every transport), "nodes" the figures of SQLite, PostgreSQL and three nodes on PostgreSQL alone, skipping the rest`)
	fs.BoolVar(&cfg.NoNodes, "no-nodes", false, "leave out the several-nodes figures (they need PostgreSQL's server programs)")
	fs.StringVar(&cfg.Out, "out", "bench/results.json", "where results.json is written")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of this process while it runs toolgate_sse in-process at the first concurrency")
	fs.StringVar(&cfg.Note, "note", "", "a remark recorded with the machine (e.g. other work shared it)")
	fs.DurationVar(&cfg.Timeout, "timeout", 45*time.Minute, "the whole run is abandoned after this")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if cfg.Only != "" && cfg.Only != "idle" && cfg.Only != "nodes" {
		return nil, fmt.Errorf("--only %q: only \"idle\" or \"nodes\" can be taken alone", cfg.Only)
	}
	if cfg.Rounds < 1 || cfg.RoundTripCalls < 1 || cfg.Warmup < 0 || len(cfg.Concurrency) == 0 ||
		cfg.LoadDuration <= 0 || cfg.IdleSessions < 1 || cfg.IdleSettle < 0 || cfg.RecoveryCalls < 1 || cfg.RecoverySessions < 1 || cfg.CommitCountCalls < 1 || cfg.StatsSettle < 0 {
		return nil, fmt.Errorf("rounds, calls, durations, sessions and concurrency must be positive")
	}
	return cfg, nil
}
