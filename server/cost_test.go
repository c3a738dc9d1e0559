package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/server"
)

// searchTool is a client's tool that declares what a call costs.
func searchTool(estimate float64) map[string]any {
	return map[string]any{
		"name": "search", "description": "Search the web (paid)", "estimated_cost": estimate,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
	}
}

// costRecord is the part of a call record that tells its cost.
type costRecord struct {
	ID            string   `json:"id"`
	Status        string   `json:"status"`
	RunID         string   `json:"run_id"`
	EstimatedCost *float64 `json:"estimated_cost"`
	Cost          *float64 `json:"cost"`
}

// costRun is the part of a run record that tells its budget and cost.
type costRun struct {
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	MaxCost float64      `json:"max_cost"`
	Cost    float64      `json:"cost"`
	Calls   []costRecord `json:"calls"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answerWithCost posts one answer (tool_result, or tool_error when errCode
// is set) reporting cost, given as raw JSON so that bad values can be sent.
func (g *gateway) answerWithCost(s session, callID, errCode, cost string) (int, []byte) {
	g.t.Helper()
	body := fmt.Sprintf(`{"type":"tool_result","id":%q,"output":"found","cost":%s}`, callID, cost)
	if errCode != "" {
		body = fmt.Sprintf(`{"type":"tool_error","id":%q,"code":%q,"error":"upstream failed","cost":%s}`, callID, errCode, cost)
	}
	return g.do("POST", "/v1/sessions/"+s.ID+"/results", s.Token, body)
}

func (g *gateway) costOfCall(id string) costRecord {
	g.t.Helper()
	var rec costRecord
	g.call("GET", "/v1/calls/"+id, testAgentKey, nil, 200, &rec)
	return rec
}

func (g *gateway) costOfRun(id string) costRun {
	g.t.Helper()
	var run costRun
	g.call("GET", "/v1/runs/"+id, testAgentKey, nil, 200, &run)
	return run
}

// runEnded reads a run until it has ended, failing after 10 s.
func (g *gateway) runEnded(id string) costRun {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		run := g.costOfRun(id)
		if run.Status != "running" {
			return run
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("run %s still running after 10s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// is reports whether v holds want.
func is(v *float64, want float64) bool { return v != nil && *v == want }

// TestCallCostRecorded: a call of a tool that declares estimated_cost keeps
// the estimate; an answer reporting cost — a result, an error, one of a
// batch — has it stored and shown beside the estimate, by GET /v1/calls/{id},
// by the list, by the call_history view and by the call_history tool (the
// cost reported, else the estimate, saying so).
func TestCallCostRecorded(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("paid-client")
	g.register(s, searchTool(0.5))
	paid, failed, batched, open := g.startCall(s, "search", map[string]any{"q": "a"}, 0),
		g.startCall(s, "search", map[string]any{"q": "b"}, 0),
		g.startCall(s, "search", map[string]any{"q": "c"}, 0),
		g.startCall(s, "search", map[string]any{"q": "d"}, 0)
	if rec := g.costOfCall(paid.ID); !is(rec.EstimatedCost, 0.5) || rec.Cost != nil {
		t.Fatalf("new call = %+v", rec)
	}
	if status, body := g.answerWithCost(s, paid.ID, "", "0.75"); status != 200 {
		t.Fatalf("answer: %d %s", status, body)
	}
	if status, body := g.answerWithCost(s, failed.ID, "QUOTA_EXCEEDED", "0.1"); status != 200 {
		t.Fatalf("tool_error: %d %s", status, body)
	}
	var acks struct {
		Results []struct {
			Status string         `json:"status"`
			Error  map[string]any `json:"error"`
		} `json:"results"`
	}
	g.call("POST", "/v1/sessions/"+s.ID+"/results", s.Token, fmt.Sprintf(
		`{"type":"tool_results","results":[{"type":"tool_result","id":%q,"output":1,"cost":2}]}`, batched.ID), 200, &acks)
	if len(acks.Results) != 1 || acks.Results[0].Status != "completed" {
		t.Fatalf("batch acks = %+v", acks)
	}

	want := map[string][2]float64{paid.ID: {0.5, 0.75}, failed.ID: {0.5, 0.1}, batched.ID: {0.5, 2}}
	for id, w := range want {
		if rec := g.costOfCall(id); !is(rec.EstimatedCost, w[0]) || !is(rec.Cost, w[1]) {
			t.Errorf("call %s = %+v, want estimated %v cost %v", id, rec, w[0], w[1])
		}
	}
	var list struct{ Calls []costRecord }
	g.call("GET", "/v1/calls?session_id="+s.ID, testAgentKey, nil, 200, &list)
	if len(list.Calls) != 4 {
		t.Fatalf("listed %d calls", len(list.Calls))
	}
	for _, c := range list.Calls {
		if w, ok := want[c.ID]; ok && (!is(c.EstimatedCost, w[0]) || !is(c.Cost, w[1])) {
			t.Errorf("listed %+v", c)
		}
	}

	// The view, as an operator reads it with SQL.
	var row struct {
		Estimated *float64 `db:"estimated_cost"`
		Cost      *float64 `db:"cost"`
	}
	if err := g.db(t).Get(&row, `SELECT estimated_cost, cost FROM call_history WHERE call_id = ?`, paid.ID); err != nil {
		t.Fatal(err)
	}
	if !is(row.Estimated, 0.5) || !is(row.Cost, 0.75) {
		t.Errorf("call_history view: estimated %v cost %v", row.Estimated, row.Cost)
	}
	var total float64
	if err := g.db(t).Get(&total, `SELECT SUM(COALESCE(cost, estimated_cost, 0)) FROM call_history WHERE session_id = ?`, s.ID); err != nil {
		t.Fatal(err)
	}
	if total != 0.75+0.1+2+0.5 {
		t.Errorf("the agents guide's spending query sums %v", total)
	}

	// The call_history tool: the cost reported, else the estimate.
	var history struct {
		Status string `json:"status"`
		Output struct {
			Calls []struct {
				ID            string   `json:"id"`
				Cost          *float64 `json:"cost"`
				CostEstimated bool     `json:"cost_estimated"`
			} `json:"calls"`
		} `json:"output"`
	}
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "call_history", "args": map[string]any{"session_id": s.ID}}, 200, &history)
	seen := 0
	for _, c := range history.Output.Calls {
		switch c.ID {
		case paid.ID:
			seen++
			if !is(c.Cost, 0.75) || c.CostEstimated {
				t.Errorf("call_history shows the answered call as %+v", c)
			}
		case open.ID:
			seen++
			if !is(c.Cost, 0.5) || !c.CostEstimated {
				t.Errorf("call_history shows the open call as %+v", c)
			}
		}
	}
	if history.Status != "completed" || seen != 2 {
		t.Fatalf("call_history = %+v", history)
	}
}

// TestBadCostRefused: a reported cost that is not a cost — negative, past
// the limit, a string, not a number at all — refuses the answer with 400
// (alone, in a batch) and changes nothing: the call stays open, without a
// cost, and a good answer is taken afterwards. A tool cannot declare such
// an estimate either, nor a run such a max_cost.
func TestBadCostRefused(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("bad-costs")
	g.register(s, searchTool(0))
	call := g.startCall(s, "search", map[string]any{}, 0)
	for _, cost := range []string{`-1`, `-0.000001`, `1e300`, `1e400`, `1000000000001`, `"NaN"`, `"1.5"`, `"abc"`, `true`, `{}`, `[1]`} {
		for _, errCode := range []string{"", "FAILED"} {
			status, body := g.answerWithCost(s, call.ID, errCode, cost)
			if status != 400 || errorCode(body) != "BAD_REQUEST" {
				t.Errorf("cost %s (%q): %d %s", cost, errCode, status, body)
			}
		}
		var acks struct {
			Results []struct {
				Error *struct{ Code string } `json:"error"`
			} `json:"results"`
		}
		g.call("POST", "/v1/sessions/"+s.ID+"/results", s.Token, fmt.Sprintf(
			`{"type":"tool_results","results":[{"type":"tool_result","id":%q,"output":1,"cost":%s}]}`, call.ID, cost), 200, &acks)
		if len(acks.Results) != 1 || acks.Results[0].Error == nil || acks.Results[0].Error.Code != "BAD_REQUEST" {
			t.Errorf("cost %s in a batch: %+v", cost, acks)
		}
	}
	if rec := g.costOfCall(call.ID); rec.Status == "completed" || rec.Status == "failed" || rec.Cost != nil || rec.EstimatedCost != nil {
		t.Fatalf("after the refusals the call is %+v", rec)
	}
	if status, body := g.answerWithCost(s, call.ID, "", "0"); status != 200 {
		t.Fatalf("a zero cost: %d %s", status, body)
	}
	if rec := g.costOfCall(call.ID); rec.Status != "completed" || !is(rec.Cost, 0) {
		t.Fatalf("answered with a zero cost: %+v", rec)
	}

	// Out of range: that tool rejected alone; not a float64: the request.
	for estimate, wantStatus := range map[string]int{`-2`: 200, `1e13`: 200, `"3"`: 400, `1e400`: 400} {
		body := fmt.Sprintf(`{"type":"register_tools","tools":[{"name":"dear","description":"d","estimated_cost":%s}]}`, estimate)
		status, reply := g.do("POST", "/v1/sessions/"+s.ID+"/tools", s.Token, body)
		var res struct {
			Registered *int `json:"registered"`
			Rejected   []struct{ Code string }
		}
		json.Unmarshal(reply, &res)
		refusedAlone := status == 200 && res.Registered != nil && *res.Registered == 0 && len(res.Rejected) == 1 && res.Rejected[0].Code == "BAD_REQUEST"
		if status != wantStatus || (status == 200 && !refusedAlone) {
			t.Errorf("estimated_cost %s: %d %s", estimate, status, reply)
		}
	}
}

// scriptedModel answers turn n (counted by the assistant messages of the
// request) with turns[n], and with "done" after the last.
func scriptedModel(turns ...[]chatToolCall) func(chatRequest) modelTurn {
	return func(req chatRequest) modelTurn {
		n := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		if n < len(turns) {
			return modelTurn{ToolCalls: turns[n]}
		}
		return modelTurn{Content: "done"}
	}
}

// runCalls lists the calls stored for a run, straight from the table.
func (g *gateway) runCalls(t *testing.T, runID string) []string {
	t.Helper()
	var ids []string
	if err := g.db(t).Select(&ids, `SELECT id FROM calls WHERE run_id = ? ORDER BY id`, runID); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestRunStopsBeforeExceedingMaxCost: a run with max_cost=5 makes its
// first call (estimated 2, reported 2.5); the model's next step asks for
// two more (estimated 4): 2.5 + 4 would pass 5, so the run fails with
// MAX_COST before making them — the calls table has the first call only —
// and the model is not asked again. The run shows its budget and cost,
// on GET and in the run_failed event.
func TestRunStopsBeforeExceedingMaxCost(t *testing.T) {
	m := startFakeModel(t, scriptedModel(
		[]chatToolCall{callTool("c1", "search", `{"q":"one"}`)},
		[]chatToolCall{callTool("c2", "search", `{"q":"two"}`), callTool("c3", "search", `{"q":"three"}`)},
	))
	g := modelGateway(t, m, nil)
	s := g.newSession("paid")
	g.register(s, searchTool(2))
	client := g.openStream(s, "")
	client.nextOfType("ready")

	run := g.runStream("/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "search", "max_cost": 5})
	started := run.next()
	runID := started.Data["run_id"].(string)
	if r := started.Data["run"].(map[string]any); r["max_cost"] != 5.0 {
		t.Fatalf("run_started = %s", started.Raw)
	}
	req := client.nextOfType("tool_call_request")
	if status, body := g.answerWithCost(s, req.Data["id"].(string), "", "2.5"); status != 200 {
		t.Fatalf("answer: %d %s", status, body)
	}
	events := run.untilRunEvent("run_failed")
	failed := events[len(events)-1]
	e := failed.Data["error"].(map[string]any)
	want := "the run would exceed max_cost=5: it has cost 2.5 and the next calls are estimated at 4"
	if e["code"] != "MAX_COST" || e["message"] != want {
		t.Fatalf("run_failed = %s", failed.Raw)
	}
	if r := failed.Data["run"].(map[string]any); r["cost"] != 2.5 || r["max_cost"] != 5.0 {
		t.Fatalf("run_failed's run = %v", r)
	}
	for _, ev := range events {
		if ev.Event == "tool_call_started" && ev.Data["tool_call_id"] != "c1" {
			t.Fatalf("a call of the refused step started: %s", ev.Raw)
		}
	}
	if ids := g.runCalls(t, runID); len(ids) != 1 || ids[0] != req.Data["id"] {
		t.Fatalf("calls stored for the run: %v", ids)
	}
	stored := g.costOfRun(runID)
	if stored.Status != "failed" || stored.MaxCost != 5 || stored.Cost != 2.5 || stored.Error == nil || stored.Error.Code != "MAX_COST" ||
		len(stored.Calls) != 1 || !is(stored.Calls[0].Cost, 2.5) || !is(stored.Calls[0].EstimatedCost, 2) {
		t.Fatalf("stored run = %+v", stored)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("the model was asked %d times, want 2", n)
	}
}

// TestRunStopsAfterOverrun: the one call of a step fits max_cost=5 by its
// estimate (1) but reports a cost of 7: the run fails with MAX_COST and
// the model is not asked again. A run without a budget, whose calls cost
// as much, finishes, and its cost is summed all the same.
func TestRunStopsAfterOverrun(t *testing.T) {
	m := startFakeModel(t, scriptedModel([]chatToolCall{callTool("c1", "search", `{"q":"dear"}`)}))
	g := modelGateway(t, m, nil)
	s := g.newSession("overrun")
	g.register(s, searchTool(1))
	client := g.openStream(s, "")
	client.nextOfType("ready")

	for _, budget := range []float64{5, 0} {
		var run costRun
		g.call("POST", "/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "go", "max_cost": budget, "wait": false}, 202, &run)
		req := client.nextOfType("tool_call_request")
		// A failed call can cost too.
		if status, body := g.answerWithCost(s, req.Data["id"].(string), "UPSTREAM_ERROR", "7"); status != 200 {
			t.Fatalf("answer: %d %s", status, body)
		}
		stored := g.runEnded(run.ID)
		if stored.Cost != 7 || stored.MaxCost != budget {
			t.Fatalf("budget %v: run = %+v", budget, stored)
		}
		if budget == 0 {
			if stored.Status != "finished" {
				t.Fatalf("without a budget: %+v", stored)
			}
			continue
		}
		if stored.Status != "failed" || stored.Error == nil || stored.Error.Code != "MAX_COST" ||
			!strings.Contains(stored.Error.Message, "the run has cost 7, past its max_cost=5") {
			t.Fatalf("with a budget: %+v", stored)
		}
		if n := len(m.Requests()); n != 1 {
			t.Fatalf("the model was asked %d times after the overrun, want 1", n)
		}
	}
}

// TestRunMaxCostRefused: a max_cost that is not a budget is refused with
// 400 and no run is stored.
func TestRunMaxCostRefused(t *testing.T) {
	m := startFakeModel(t, scriptedModel())
	g := modelGateway(t, m, nil)
	for _, bad := range []string{`-1`, `1e13`, `"5"`, `null1`} {
		status, body := g.do("POST", "/v1/runs", testAgentKey, `{"input":"hi","max_cost":`+bad+`}`)
		if status != 400 || errorCode(body) != "BAD_REQUEST" {
			t.Errorf("max_cost %s: %d %s", bad, status, body)
		}
	}
	var runs int
	if err := g.db(t).Get(&runs, `SELECT COUNT(*) FROM runs`); err != nil || runs != 0 {
		t.Fatalf("%d runs stored (%v)", runs, err)
	}
}

// TestRunBudgetSurvivesRestart: a run with max_cost=3 is waiting on its
// first call (estimated 2) when the gateway stops. Started again on the
// same database, the run goes on: the call made before the stop is not
// counted twice (2 + 2 would pass 3), its answer (cost 2) comes in, and
// the model's next call, estimated 2, would take the run to 4: the run
// stops there, with its budget as it was stored.
func TestRunBudgetSurvivesRestart(t *testing.T) {
	m := startFakeModel(t, scriptedModel(
		[]chatToolCall{callTool("c1", "search", `{"q":"before"}`)},
		[]chatToolCall{callTool("c2", "search", `{"q":"after"}`)},
	))
	cfg := server.ConfigForTest(t)
	cfg.LLMBaseURL, cfg.LLMModel = m.URL, "fake-model"
	srv, stop := server.StartForTest(t, cfg)
	g := &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	s := g.newSession("restart")
	g.register(s, searchTool(2))
	client := g.openStream(s, "")
	client.nextOfType("ready")
	var run costRun
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"session_id": s.ID, "input": "go", "max_cost": 3, "wait": false}, 202, &run)
	req := client.nextOfType("tool_call_request")
	callID := req.Data["id"].(string)
	client.Close()
	stop()

	srv, _ = server.StartForTest(t, cfg)
	g = &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
	follow := g.followRun(run.ID)
	follow.untilRunEvent("run_started")
	client = g.openStream(s, req.ID)
	client.nextOfType("ready")
	again := client.nextOfType("tool_call_request")
	if again.Data["id"] != callID {
		t.Fatalf("redelivered %s, want %s", again.Raw, callID)
	}
	if status, body := g.answerWithCost(s, callID, "", "2"); status != 200 {
		t.Fatalf("answer: %d %s", status, body)
	}
	events := follow.untilRunEvent("run_failed")
	failed := events[len(events)-1]
	want := "the run would exceed max_cost=3: it has cost 2 and the next calls are estimated at 2"
	if e := failed.Data["error"].(map[string]any); e["code"] != "MAX_COST" || e["message"] != want {
		t.Fatalf("run_failed = %s", failed.Raw)
	}
	if ids := g.runCalls(t, run.ID); len(ids) != 1 || ids[0] != callID {
		t.Fatalf("calls stored for the run: %v", ids)
	}
	if stored := g.costOfRun(run.ID); stored.MaxCost != 3 || stored.Cost != 2 || stored.Status != "failed" {
		t.Fatalf("stored run = %+v", stored)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("the model was asked %d times, want 2", n)
	}
	raw, _ := json.Marshal(g.costOfRun(run.ID))
	t.Logf("run after restart: %s", raw)
}
