package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/pgtest"
)

// The systems of the several-nodes figures: the toolgate binary
// on SQLite, on PostgreSQL alone, and three of them on one PostgreSQL.
// Each is measured over HTTP, its clients on the first node and its
// callers spread over all of them.
const (
	sysNodesSQLite = "toolgate_sqlite"
	sysNodesPG1    = "toolgate_pg_1node"
	sysNodesPG3    = "toolgate_pg_3nodes"
)

// nodesFigures takes, for SQLite, PostgreSQL on one node and PostgreSQL on
// three, the round trip of one call at a time (a caller on the last node,
// the client on the first), the calls per second at the first
// concurrency (callers spread over the nodes) and the database commits
// one call costs. PostgreSQL runs durably (fsync and synchronous commit
// on), as in production.
func nodesFigures(ctx context.Context, cfg *config, c *collector, bin, tmp, agentKey string) error {
	logf("several nodes: starting PostgreSQL (fsync on)")
	pg, err := pgtest.Start(pgtest.Options{Durable: true})
	if err != nil {
		return err
	}
	defer pg.Stop()
	conc := cfg.Concurrency[0]
	var ts []*target
	defer func() { stopAll(ts) }()
	sqlite, err := nodesTarget(ctx, sysNodesSQLite, bin, []string{filepath.Join(tmp, "nodes-sqlite.db")}, agentKey, conc, nil)
	if err != nil {
		return err
	}
	ts = append(ts, sqlite)
	for _, n := range []int{1, 3} {
		url, err := pg.CreateDatabase(ctx)
		if err != nil {
			return err
		}
		dbs := make([]string, n)
		for i := range dbs {
			dbs[i] = fmt.Sprintf("%s&application_name=bench-node%d", url, i+1)
		}
		sys := sysNodesPG1
		if n == 3 {
			sys = sysNodesPG3
		}
		t, err := nodesTarget(ctx, sys, bin, dbs, agentKey, conc, func(ctx context.Context) (float64, error) {
			return pgCommits(ctx, pg.URL("postgres"))
		})
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	if err := roundTripRounds(ctx, cfg, c, ts, "nodes_roundtrip", "several nodes"); err != nil {
		return err
	}
	for r := range cfg.Rounds {
		for _, t := range ts {
			if err := measureLoad(ctx, cfg, c, t, r, conc, "nodes_", "several nodes", nil); err != nil {
				return err
			}
		}
	}
	for _, t := range ts {
		perCall, err := commitsPerCall(ctx, t, conc, cfg.CommitCountCalls, cfg.StatsSettle)
		if err != nil {
			return err
		}
		c.add(t.system, "nodes_db_commits_per_call", perCall)
		logf("several nodes %-18s %.2f database commits per call", t.system, perCall)
	}
	return nil
}

// nodesTarget starts one toolgate process per database in dbs (a SQLite
// file, or the same PostgreSQL database for several nodes), n clients on
// the first, and callers that send call i to node i mod nodes — a round
// trip (call 0) goes to the last node, so that on three nodes it crosses
// from one to another. commits, when set, counts the database's commits
// (PostgreSQL); else the gateway's /metrics count its transactions.
func nodesTarget(ctx context.Context, sys, bin string, dbs []string, agentKey string, n int, commits func(context.Context) (float64, error)) (*target, error) {
	var procs []*gatewayProc
	stopProcs := func() {
		for _, g := range procs {
			g.kill()
		}
	}
	for _, db := range dbs {
		g, err := startGatewayProc(ctx, bin, db, agentKey, "127.0.0.1:0")
		if err != nil {
			stopProcs()
			return nil, fmt.Errorf("%s: %w", sys, err)
		}
		procs = append(procs, g)
	}
	cl, sess, err := startClients(ctx, sysSSE, procs[0].url, n)
	if err != nil {
		stopProcs()
		return nil, err
	}
	client := newAPIClient(1024)
	callers := make([]func(context.Context, int) error, len(procs))
	for i, g := range procs {
		callers[i] = httpCaller(client, g.url, agentKey, sess)
	}
	last := len(procs) - 1
	t := &target{
		system: sys, sessions: sess,
		call: func(ctx context.Context, i int) error {
			return callers[(last+i)%len(callers)](ctx, i)
		},
		cpu:  []cpuMeter{pidCPU(roleClient, cl.pid()), selfCPU(roleCaller)},
		stop: func() { cl.stop(); stopProcs() },
	}
	if commits == nil {
		url := procs[0].url
		commits = func(ctx context.Context) (float64, error) {
			return metricValue(ctx, client, url+"/metrics", agentKey, "toolgate_db_transactions_total")
		}
	}
	t.transactions = commits
	return t, nil
}

// pgCommits is the server's committed transactions so far, every
// database: a statement outside a transaction counts as one, so this is
// the round trips that commit, the reads outside a transaction included.
func pgCommits(ctx context.Context, url string) (float64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	// A snapshot of the statistics is taken once per transaction: this
	// one reads them fresh.
	err = conn.QueryRow(ctx, `SELECT sum(xact_commit)::bigint FROM pg_stat_database`).Scan(&n)
	return float64(n), err
}

// commitsPerCall counts the database commits of calls made by conc
// callers, less what the nodes commit idle (sweeps, leases, the
// listeners' safety net) over the same time, and less this count's own
// reads. On PostgreSQL the statistics lag (an idle backend reports within
// 10 s): each reading waits settle first.
func commitsPerCall(ctx context.Context, t *target, conc, calls int, settle time.Duration) (float64, error) {
	pg := t.system != sysNodesSQLite
	wait := func() bool {
		if !pg {
			return true
		}
		return sleepCtx(ctx, settle)
	}
	if !wait() {
		return 0, ctx.Err()
	}
	idle0, err := t.readTransactions(ctx)
	if err != nil {
		return 0, err
	}
	idleStart := time.Now()
	if !wait() {
		return 0, ctx.Err()
	}
	before, err := t.readTransactions(ctx)
	if err != nil {
		return 0, err
	}
	idleRate := (before - idle0 - 1) / time.Since(idleStart).Seconds() // the reading itself is one
	if !pg {
		idleRate = 0
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	next := make(chan int)
	errs := make(chan error, conc)
	go func() {
		defer close(next)
		for i := range calls {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for w := range conc {
		go func() {
			for range next {
				if err := t.call(ctx, w); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range conc {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	if !wait() {
		return 0, ctx.Err()
	}
	after, err := t.readTransactions(ctx)
	if err != nil {
		return 0, err
	}
	extra := 0.0
	if pg {
		extra = 1 + idleRate*time.Since(start).Seconds()
	}
	return (after - before - extra) / float64(calls), nil
}
