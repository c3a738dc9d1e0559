package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/server"
)

// The systems compared, as keyed in results.json.
const (
	sysSSE      = "toolgate_sse"
	sysPoll     = "toolgate_poll"
	sysBaseline = "websocket_baseline"
	sysFloor    = "http_floor"
)

// systems is the order of the table's columns.
var systems = []string{sysSSE, sysPoll, sysBaseline, sysFloor, sysNodesSQLite, sysNodesPG1, sysNodesPG3}

// benchArgs are the arguments of every benchmark call.
var benchArgs = json.RawMessage(`{"text":"ping"}`)

// target is one system ready to be called: its server, its clients (in
// their own process) and a caller.
type target struct {
	system   string
	sessions []string // one per client; the floor has none
	// call makes one call to the client of session i and returns when the
	// caller has its answer.
	call func(ctx context.Context, i int) error
	// transactions, for toolgate, returns the database transactions so far.
	transactions func(ctx context.Context) (float64, error)
	// cpu reads the CPU time of the processes a load runs in.
	cpu  []cpuMeter
	stop func()
}

// readTransactions returns the database transactions so far, or 0 for a
// system without a database.
func (t *target) readTransactions(ctx context.Context) (float64, error) {
	if t.transactions == nil {
		return 0, nil
	}
	return t.transactions(ctx)
}

// stopAll stops targets in order.
func stopAll(ts []*target) {
	for _, t := range ts {
		if t != nil && t.stop != nil {
			t.stop()
		}
	}
}

// startClients runs n clients of system against url in a child process.
func startClients(ctx context.Context, system, url string, n int) (*child, []string, error) {
	c, err := selfChild("clients "+system, "clients", "--system", system, "--url", url, "--n", fmt.Sprint(n))
	if err != nil {
		return nil, nil, err
	}
	line, err := c.expect(ctx, "READY ", 120*time.Second)
	if err != nil {
		c.kill()
		return nil, nil, err
	}
	var ready struct {
		Sessions []string `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		c.kill()
		return nil, nil, err
	}
	return c, ready.Sessions, nil
}

// inProcessTargets starts, inside this process, a toolgate gateway per
// toolgate transport (server.Open on a fresh SQLite file), the baseline and
// the floor, with n clients each in child processes; callers are this
// process's goroutines calling the engine (or the baseline) directly.
func inProcessTargets(ctx context.Context, tmp, agentKey string, n int) ([]*target, error) {
	var ts []*target
	fail := func(err error) ([]*target, error) { stopAll(ts); return nil, err }
	for _, sys := range []string{sysSSE, sysPoll} {
		t, err := inProcessToolgate(ctx, sys, filepath.Join(tmp, "inproc-"+sys+".db"), agentKey, n)
		if err != nil {
			return fail(err)
		}
		ts = append(ts, t)
	}
	b := newBaseline(agentKey)
	bsrv, err := startHTTPServer(b.handler())
	if err != nil {
		return fail(err)
	}
	bcl, bsess, err := startClients(ctx, sysBaseline, bsrv.URL, n)
	if err != nil {
		bsrv.Close()
		return fail(err)
	}
	ts = append(ts, &target{
		system: sysBaseline, sessions: bsess,
		call: func(ctx context.Context, i int) error {
			rec, err := b.Call(ctx, callRequest{SessionID: bsess[i], Tool: echoTool, Args: benchArgs})
			if err != nil {
				return err
			}
			return checkCompleted(rec.Status, rec.Output)
		},
		cpu:  []cpuMeter{selfCPU(roleGateway), pidCPU(roleClient, bcl.pid())},
		stop: func() { bcl.stop(); bsrv.Close() },
	})
	fsrv, err := startHTTPServer(floorHandler())
	if err != nil {
		return fail(err)
	}
	ft := floorTarget(fsrv.URL, n)
	ft.cpu = []cpuMeter{selfCPU(roleGateway)}
	ft.stop = fsrv.Close
	return append(ts, ft), nil
}

// inProcessToolgate runs the gateway in this process with sys clients.
func inProcessToolgate(ctx context.Context, sys, db, agentKey string, n int) (*target, error) {
	// All clients come from one address at once: no session limit.
	cfg := server.Config{Addr: "127.0.0.1:0", DBPath: db, AgentKey: agentKey, SessionRate: -1}
	srv, err := server.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(sctx); close(served) }()
	stopServer := func() { cancel(); <-served; srv.Close() }
	cl, sess, err := startClients(ctx, sys, srv.URL(), n)
	if err != nil {
		stopServer()
		return nil, err
	}
	eng := srv.Engine
	return &target{
		system: sys, sessions: sess,
		call: func(ctx context.Context, i int) error {
			call, err := eng.Calls.CreateCall(ctx, toolgate.CallRequest{SessionID: sess[i], Tool: echoTool, Args: benchArgs}, "")
			if err != nil {
				return err
			}
			final, err := eng.Calls.WaitCall(ctx, call.ID, -1)
			if err != nil {
				return err
			}
			return checkCompleted(string(final.Status), final.Output)
		},
		transactions: func(context.Context) (float64, error) { return float64(srv.Store.Transactions()), nil },
		cpu:          []cpuMeter{selfCPU(roleGateway), pidCPU(roleClient, cl.pid())},
		stop:         func() { cl.stop(); stopServer() },
	}, nil
}

// processTargets starts every system as its own process — the real
// toolgate binary (one per transport, each on a fresh SQLite file), the
// baseline and the floor re-executed from this program — with n clients
// each in child processes; callers are this process's goroutines using
// POST /v1/calls (POST /echo for the floor).
func processTargets(ctx context.Context, bin, tmp, agentKey string, n int) ([]*target, error) {
	var ts []*target
	fail := func(err error) ([]*target, error) { stopAll(ts); return nil, err }
	client := newAPIClient(1024)
	for _, sys := range []string{sysSSE, sysPoll} {
		g, err := startGatewayProc(ctx, bin, filepath.Join(tmp, "proc-"+sys+".db"), agentKey, "127.0.0.1:0")
		if err != nil {
			return fail(err)
		}
		cl, sess, err := startClients(ctx, sys, g.url, n)
		if err != nil {
			g.kill()
			return fail(err)
		}
		url := g.url
		ts = append(ts, &target{
			system: sys, sessions: sess,
			call: httpCaller(client, url, agentKey, sess),
			transactions: func(ctx context.Context) (float64, error) {
				return metricValue(ctx, client, url+"/metrics", agentKey, "toolgate_db_transactions_total")
			},
			cpu:  []cpuMeter{pidCPU(roleGateway, g.proc.pid()), pidCPU(roleClient, cl.pid()), selfCPU(roleCaller)},
			stop: func() { cl.stop(); g.kill() },
		})
	}
	bp, err := selfChild("serve-baseline", "serve-baseline", "--agent-key", agentKey)
	if err != nil {
		return fail(err)
	}
	burl, err := bp.expect(ctx, "SERVING ", 30*time.Second)
	if err != nil {
		bp.kill()
		return fail(err)
	}
	bcl, bsess, err := startClients(ctx, sysBaseline, burl, n)
	if err != nil {
		bp.kill()
		return fail(err)
	}
	ts = append(ts, &target{system: sysBaseline, sessions: bsess, call: httpCaller(client, burl, agentKey, bsess),
		cpu:  []cpuMeter{pidCPU(roleGateway, bp.pid()), pidCPU(roleClient, bcl.pid()), selfCPU(roleCaller)},
		stop: func() { bcl.stop(); bp.stop() }})
	fp, err := selfChild("serve-floor", "serve-floor")
	if err != nil {
		return fail(err)
	}
	furl, err := fp.expect(ctx, "SERVING ", 30*time.Second)
	if err != nil {
		fp.kill()
		return fail(err)
	}
	ft := floorTarget(furl, n)
	ft.cpu = []cpuMeter{pidCPU(roleGateway, fp.pid()), selfCPU(roleCaller)}
	ft.stop = fp.stop
	return append(ts, ft), nil
}

// httpCaller makes a call with POST /v1/calls and wait, as a backend does.
func httpCaller(client *http.Client, url, agentKey string, sessions []string) func(context.Context, int) error {
	bodies := make([][]byte, len(sessions))
	for i, s := range sessions {
		bodies[i], _ = json.Marshal(callRequest{SessionID: s, Tool: echoTool, Args: benchArgs})
	}
	return func(ctx context.Context, i int) error {
		status, data, err := postRaw(ctx, client, url+"/v1/calls", agentKey, bodies[i])
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("POST /v1/calls: %d %s", status, bytes.TrimSpace(data))
		}
		var rec callRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return err
		}
		return checkCompleted(rec.Status, rec.Output)
	}
}

// floorTarget posts the call's arguments to the echo server and checks
// they come back: one HTTP exchange, no client, no gateway.
func floorTarget(url string, n int) *target {
	client := newAPIClient(1024)
	return &target{
		system:   sysFloor,
		sessions: make([]string, n),
		call: func(ctx context.Context, i int) error {
			status, data, err := postRaw(ctx, client, url+"/echo", "", benchArgs)
			if err != nil {
				return err
			}
			if status != http.StatusOK || !bytes.Equal(data, benchArgs) {
				return fmt.Errorf("echo: %d %q", status, data)
			}
			return nil
		},
	}
}

// checkCompleted checks that a call ended completed with the echoed
// arguments as output.
func checkCompleted(status string, output json.RawMessage) error {
	if status != "completed" {
		return fmt.Errorf("call ended %s", status)
	}
	if !bytes.Contains(output, []byte(`"ping"`)) {
		return fmt.Errorf("call output %s, want %s", bytes.TrimSpace(output), benchArgs)
	}
	return nil
}

// postRaw posts an encoded JSON body (with a bearer secret when one is
// given) and returns the status and the whole reply.
func postRaw(ctx context.Context, client *http.Client, url, secret string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
