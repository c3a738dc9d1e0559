package chaos_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// Settings of a chaos run.
const (
	killsEnv = "TOOLGATE_CHAOS_KILLS" // how many times the gateway is killed; unset skips the test
	seedEnv  = "TOOLGATE_CHAOS_SEED"  // replays a run's kill times and delays

	sdkClients = 4 // Go SDK clients, one session each (the first long-polls)
	callers    = 6 // goroutines making calls one after another

	minUptime   = time.Second     // the gateway runs at least this long between kills…
	maxUptime   = 3 * time.Second // …and at most this long
	maxDowntime = 300 * time.Millisecond

	// settleDeadline is how long the callers have, after the last
	// restart, to see every call end. A caller still waiting then is stuck.
	settleDeadline = 60 * time.Second
)

// TestChaos kills the real gateway with SIGKILL again and again (every 1–3
// s, at random from a logged seed) while Go SDK clients answer calls and
// callers make them, then restarts it a last time and checks, once every
// caller has its answer: every call created (every Idempotency-Key used)
// has exactly one call with one final state, read back through the API and
// from the database file's calls table and call_history view; every call
// completed with the output of an execution of its own, and no later answer
// replaced the one its caller was given; each call's tool ran once (the
// clients lived through the test, and a client runs a call id once however
// often the gateway sends it again); and every caller returned before the
// deadline. It prints the figures RELIABILITY.md records.
func TestChaos(t *testing.T) {
	kills, err := strconv.Atoi(os.Getenv(killsEnv))
	if os.Getenv(killsEnv) == "" {
		t.Skipf("the chaos test runs with %s=<kills> (make chaos)", killsEnv)
	}
	if err != nil || kills < 1 {
		t.Fatalf("%s=%q: want a positive number of kills", killsEnv, os.Getenv(killsEnv))
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
	}
	t.Logf("chaos: %d kills, seed %d (replay with %s=%d)", kills, seed, seedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))

	// Warnings only: the debug log of tens of thousands of calls would be
	// kept in memory for the whole run.
	g := gatewaytest.Start(t, "--log-level", "warn", "--heartbeat", "1s")
	ledger := newExecutionLedger()
	logs := &redeliveryCounter{}
	clients := startClients(t, g, sdkClients, ledger, logs, seed)
	sessions := make([]string, len(clients))
	for i, c := range clients {
		sessions[i] = c.SessionID()
	}

	var killCount atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	group := make([]*gatewaytest.Caller, callers)
	for i := range group {
		group[i] = newCaller(i, g.URL, g.AgentKey, sessions, &killCount)
		wg.Add(1)
		go func() {
			defer wg.Done()
			group[i].Run(stop)
		}()
	}

	started := time.Now()
	for k := 1; k <= kills; k++ {
		time.Sleep(minUptime + time.Duration(rng.Int64N(int64(maxUptime-minUptime)))) // the load runs meanwhile
		g.Kill()
		killCount.Add(1)
		time.Sleep(time.Duration(rng.Int64N(int64(maxDowntime))))
		g.Restart(t)
	}
	close(stop)
	lastRestart := time.Now()
	t.Logf("chaos: %d kills in %s; waiting for the callers", kills, time.Since(started).Round(time.Millisecond))

	allReturned := make(chan struct{})
	go func() { wg.Wait(); close(allReturned) }()
	select {
	case <-allReturned:
	case <-time.After(settleDeadline):
		var stuck []string
		for _, c := range group {
			if key := c.InFlight(); key != "" {
				stuck = append(stuck, key)
			}
		}
		t.Fatalf("callers still waiting %s after the last restart: %v\nSDK warnings:\n%s", settleDeadline, stuck, logs.lastWarnings())
	}

	t.Logf("chaos: every caller returned %s after the last restart", time.Since(lastRestart).Round(time.Millisecond))
	var outcomes []gatewaytest.CallOutcome
	for _, c := range group {
		outcomes = append(outcomes, c.Outcomes()...)
	}
	f := figures{Kills: kills, Executions: ledger.total, Redelivered: logs.redelivered.Load()}

	// Through the API of the gateway as it runs after the last restart.
	byID := map[string]gatewaytest.CallOutcome{}
	for _, out := range outcomes {
		if out.Err != nil {
			t.Errorf("caller error: %v", out.Err)
			continue
		}
		byID[out.ID] = out
		f.RePosts += out.Posts - 1
		f.Reattaches += out.Reattaches
		if out.KillsDuring > 0 {
			f.CallsAcrossAny++
			f.LongestAcross = max(f.LongestAcross, out.Ended.Sub(out.Started))
		}
		if got := readCall(t, g.URL, g.AgentKey, out.ID); got.Status != out.Final.Status || !gatewaytest.SameJSON(got.Output, out.Final.Output) {
			t.Errorf("%s (%s): the caller was given %s %s, GET /v1/calls says %s %s", out.Key, out.ID, out.Final.Status, out.Final.Output, got.Status, got.Output)
			f.Doubled++
		}
	}
	closing := time.Now()
	for _, c := range clients {
		c.Close()
	}
	t.Logf("chaos: clients closed in %s", time.Since(closing).Round(time.Millisecond))
	g.Kill() // the database file is the last word

	// From the database file.
	stored := readStoredCalls(t, g.DBPath)
	f.Created = len(stored)
	seenKeys := map[string]bool{}
	for _, row := range stored {
		if row.Key == nil {
			t.Errorf("call %s has no Idempotency-Key: no caller made it", row.ID)
			continue
		}
		if seenKeys[*row.Key] {
			t.Errorf("Idempotency-Key %s names two calls", *row.Key)
		}
		seenKeys[*row.Key] = true
		out, ok := byID[row.ID]
		switch {
		case !ok:
			t.Errorf("call %s (key %s) is in the database, but no caller ended with it", row.ID, *row.Key)
			f.Lost++
			continue
		case out.Key != *row.Key:
			t.Errorf("call %s: key %s in the database, the caller used %s", row.ID, *row.Key, out.Key)
		}
		if row.HistoryStatus == nil || *row.HistoryStatus != row.Status {
			t.Errorf("call %s: status %s, call_history says %v", row.ID, row.Status, row.HistoryStatus)
		}
		if row.Status != string(toolgate.StatusCompleted) || row.Output == nil {
			t.Errorf("call %s (%s) ended %s, not completed: lost", row.ID, out.Key, row.Status)
			f.Lost++
			continue
		}
		if row.HistoryOutput == nil || !gatewaytest.SameJSON([]byte(*row.HistoryOutput), []byte(*row.Output)) {
			t.Errorf("call %s: output %s, call_history says %v", row.ID, *row.Output, row.HistoryOutput)
		}
		if !gatewaytest.SameJSON([]byte(*row.Output), out.Final.Output) {
			t.Errorf("call %s: the caller was given %s, the database holds %s: an answer applied over another", row.ID, out.Final.Output, *row.Output)
			f.Doubled++
			continue
		}
		var answer chaosOutput
		if err := json.Unmarshal([]byte(*row.Output), &answer); err != nil || answer.Call != row.ID {
			t.Errorf("call %s holds the output %s, not its own", row.ID, *row.Output)
			f.Doubled++
			continue
		}
		execs := ledger.executions(row.ID)
		fromOwn := false
		for _, e := range execs {
			fromOwn = fromOwn || e.number == answer.Execution
		}
		if !fromOwn {
			t.Errorf("call %s holds the answer of execution %d, which was not one of its own %v", row.ID, answer.Execution, execs)
			f.Doubled++
			continue
		}
		if len(execs) > 1 {
			f.RepeatedExecs++
			t.Errorf("call %s ran %d times (%v); its client lived through the test and had taken it once", row.ID, len(execs), execs)
		}
		if row.Attempts > 1 {
			f.SentAgain++
		}
		f.Answered++
	}
	for _, out := range outcomes {
		if out.Err == nil && !seenKeys[out.Key] {
			t.Errorf("%s: the caller was given call %s, which is not in the database", out.Key, out.ID)
			f.Lost++
		}
	}
	if f.Created == 0 || f.CallsAcrossAny == 0 {
		t.Errorf("the run proved nothing: %d calls, %d across a kill", f.Created, f.CallsAcrossAny)
	}
	t.Logf("chaos figures (seed %d):\n| what | count |\n| --- | --- |\n%s", seed, f)
	if t.Failed() {
		t.Logf("SDK warnings:\n%s", strings.TrimSpace(logs.lastWarnings()))
	}
}
