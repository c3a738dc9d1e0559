package multinode_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// callTimeout is every call's timeout in TestKillEachNode: far longer than
// a node is ever down, so a call that does not complete was lost, not slow.
const callTimeout = time.Minute

// newCaller returns caller number of TestKillEachNode: calls to echoTool
// in sessions through baseURL (the balancer), each request bounded by 15 s
// and each call followed for its timeout and 30 s more.
func newCaller(number int, baseURL string, sessions []string, kills *atomic.Int64) *gatewaytest.Caller {
	return &gatewaytest.Caller{
		Number: number, KeyPrefix: "multinode", Sessions: sessions,
		BaseURL: baseURL, AgentKey: agentKey, Tool: echoTool, Kills: kills,
		CallTimeout: callTimeout, GiveUp: callTimeout + 30*time.Second,
		RequestTimeout: 15 * time.Second, HTTP: httpClient,
	}
}

// storedCall is a call's row and its call_history line.
type storedCall struct {
	ID            string  `db:"id"`
	Key           *string `db:"idempotency_key"`
	Status        string  `db:"status"`
	Output        *string `db:"output"`
	HistoryStatus *string `db:"history_status"`
	HistoryOutput *string `db:"history_output"`
}

// Each node in turn is killed with SIGKILL while Go SDK clients (behind a
// round-robin balancer, so their streams and polls are spread over the
// nodes) answer calls and callers (through the same balancer) make them.
// A killed node's clients reconnect to another node and get their open
// calls; its callers re-attach anywhere. The node is restarted and the
// load goes on. At the end every call created (every Idempotency-Key
// used) has ended completed exactly once, with the output of its own
// execution, the one its caller was given, in the calls table and the
// call_history view; each call's tool ran once.
func TestKillEachNode(t *testing.T) {
	c := startCluster(t, 3, "--heartbeat", "1s", "--log-level", "info")
	var backends []string
	for _, nd := range c.Nodes {
		backends = append(backends, nd.Addr())
	}
	lb := newBalancer(t, backends)
	l := newLedger()
	var sessions []string
	var logs []*warnings
	for i, transport := range []string{mobile.TransportAuto, mobile.TransportPoll, mobile.TransportSSE} {
		client, w := connectSDK(t, lb.URL, "killed-"+string(rune('a'+i)), transport, l)
		sessions = append(sessions, client.SessionID())
		logs = append(logs, w)
	}

	var kills atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	group := make([]*gatewaytest.Caller, 6)
	for i := range group {
		group[i] = newCaller(i, lb.URL, sessions, &kills)
		wg.Add(1)
		go func() { defer wg.Done(); group[i].Run(stop) }()
	}
	for _, nd := range c.Nodes {
		time.Sleep(1500 * time.Millisecond) // the load runs meanwhile
		nd.Kill()
		kills.Add(1)
		time.Sleep(time.Second) // the other two carry the load
		nd.Restart(t)
	}
	time.Sleep(time.Second)
	close(stop)
	allReturned := make(chan struct{})
	go func() { wg.Wait(); close(allReturned) }()
	select {
	case <-allReturned:
	case <-time.After(60 * time.Second):
		var stuck []string
		for _, g := range group {
			if key := g.InFlight(); key != "" {
				stuck = append(stuck, key)
			}
		}
		for i, w := range logs {
			t.Logf("client %d warnings:\n%s", i, w)
		}
		t.Fatalf("callers still waiting 60s after the last restart: %v", stuck)
	}

	byID := map[string]gatewaytest.CallOutcome{}
	across := 0
	for _, g := range group {
		for _, out := range g.Outcomes() {
			if out.Err != nil {
				t.Errorf("caller: %v", out.Err)
				continue
			}
			byID[out.ID] = out
			if out.KillsDuring > 0 {
				across++
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stored []storedCall
	err := c.DB.SelectContext(ctx, &stored, `SELECT c.id, c.idempotency_key, c.status, c.output,
		h.status AS history_status, h.output AS history_output
		FROM calls c LEFT JOIN call_history h ON h.call_id = c.id`)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, row := range stored {
		if row.Key == nil {
			t.Errorf("call %s has no Idempotency-Key: no caller made it", row.ID)
			continue
		}
		if keys[*row.Key] {
			t.Errorf("Idempotency-Key %s names two calls", *row.Key)
		}
		keys[*row.Key] = true
		out, ok := byID[row.ID]
		switch {
		case !ok:
			t.Errorf("call %s (key %s) is in the database, but no caller ended with it", row.ID, *row.Key)
			continue
		case row.Status != string(toolgate.StatusCompleted) || row.Output == nil:
			t.Errorf("call %s (%s) ended %s, not completed: lost", row.ID, *row.Key, row.Status)
			continue
		case row.HistoryStatus == nil || *row.HistoryStatus != row.Status ||
			row.HistoryOutput == nil || !gatewaytest.SameJSON([]byte(*row.HistoryOutput), []byte(*row.Output)):
			t.Errorf("call %s: %s %s, call_history says %v %v", row.ID, row.Status, *row.Output, row.HistoryStatus, row.HistoryOutput)
		case !gatewaytest.SameJSON([]byte(*row.Output), out.Final.Output):
			t.Errorf("call %s: the caller was given %s, the database holds %s: answered twice", row.ID, out.Final.Output, *row.Output)
		}
		var answer echoOutput
		if json.Unmarshal([]byte(*row.Output), &answer) != nil || answer.Call != row.ID {
			t.Errorf("call %s holds the output %s, not its own", row.ID, *row.Output)
		}
		if runs := l.executions(row.ID); len(runs) != 1 {
			t.Errorf("call %s ran %d times (%v); its client lived through the test", row.ID, len(runs), runs)
		}
	}
	for _, out := range byID {
		if !keys[out.Key] {
			t.Errorf("%s: the caller was given call %s, which is not in the database", out.Key, out.ID)
		}
	}
	if len(stored) == 0 || across == 0 {
		t.Errorf("the run proved nothing: %d calls, %d across a kill", len(stored), across)
	}
	t.Logf("%d calls, %d of them across a kill, every one completed once", len(stored), across)

	// The restarted nodes serve: a call through each.
	for _, nd := range c.Nodes {
		status, call, err := createCall(ctx, nd.URL, "", sessions[0], map[string]any{}, 20*time.Second, true)
		if err != nil || status != http.StatusOK || call.Status != toolgate.StatusCompleted {
			t.Errorf("after the kills, a call on %s: %d %s %v", nd.Name, status, call.Status, err)
		}
	}
}
