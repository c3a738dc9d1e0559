package server_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite"

	"github.com/toolgate/toolgate/internal/testwait"
)

// TestCallOverStream is one whole call: a caller waits on POST /v1/calls,
// the client gets ready and the request on its stream, answers, and the
// caller has the output; the database holds the finished call.
func TestCallOverStream(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("phone")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	if got := st.Header.Get("X-Accel-Buffering"); got != "no" {
		t.Errorf("X-Accel-Buffering = %q, want no", got)
	}
	if got := st.Header.Get("Cache-Control"); got != "no-cache, no-transform" {
		t.Errorf("Cache-Control = %q", got)
	}
	if ev := st.next(); ev.Event != "ready" || ev.Data["session_id"] != s.ID {
		t.Fatalf("first event = %+v, want ready", ev)
	}

	var final callRecord
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.call("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "hello"}}, 200, &final)
	}()
	ev := st.nextOfType("tool_call_request")
	if ev.Data["name"] != "echo" || ev.Data["args"].(map[string]any)["text"] != "hello" || ev.Data["attempt"] != 1.0 || ev.ID == "" {
		t.Fatalf("request = %+v", ev)
	}
	status, reply := g.answer(s, ev.Data["id"].(string), map[string]any{"echo": "hello"})
	if status != 200 || reply["type"] != "result_acknowledged" || reply["status"] != "completed" || reply["duplicate"] != nil {
		t.Fatalf("ack %d %v", status, reply)
	}
	<-done
	if final.Status != "completed" || string(final.Output) != `{"echo":"hello"}` || final.Attempts != 1 {
		t.Fatalf("caller got %+v (output %s)", final, final.Output)
	}

	db := sqlx.MustOpen("sqlite", g.DBPath)
	defer db.Close()
	var row struct {
		Status string `db:"status"`
		Output string `db:"output"`
		Client string `db:"client_name"`
	}
	if err := db.Get(&row, `SELECT status, output, client_name FROM call_history WHERE call_id = ?`, final.ID); err != nil {
		t.Fatal(err)
	}
	if row.Status != "completed" || row.Output != `{"echo":"hello"}` || row.Client != "phone" {
		t.Fatalf("call_history row = %+v", row)
	}
}

// TestCallOverPoll delivers a call by long-poll: a held poll answers as
// soon as the call is stored, with the event and the next cursor.
func TestCallOverPoll(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("behind-proxy")
	g.register(s, echoTool)

	var first struct {
		Events []map[string]any `json:"events"`
		Cursor int64            `json:"cursor"`
	}
	g.call("GET", "/v1/sessions/"+s.ID+"/poll?wait_ms=0", s.Token, nil, 200, &first)
	if len(first.Events) != 0 {
		t.Fatalf("no calls yet, got %v", first.Events)
	}

	type pollReply struct {
		Events []map[string]any `json:"events"`
		Cursor int64            `json:"cursor"`
	}
	polled := make(chan pollReply, 1)
	go func() {
		var r pollReply
		g.call("GET", fmt.Sprintf("/v1/sessions/%s/poll?cursor=%d&wait_ms=10000", s.ID, first.Cursor), s.Token, nil, 200, &r)
		polled <- r
	}()
	rec := g.startCall(s, "echo", map[string]any{"text": "via poll"}, 0)
	r := <-polled
	if len(r.Events) != 1 || r.Events[0]["type"] != "tool_call_request" || r.Events[0]["id"] != rec.ID || r.Events[0]["seq"] != float64(r.Cursor) {
		t.Fatalf("poll = %+v", r)
	}
	if status, _ := g.answer(s, rec.ID, "text output stays a string"); status != 200 {
		t.Fatalf("answer status %d", status)
	}
	final := g.waitCall(rec.ID)
	if final.Status != "completed" || string(final.Output) != `"text output stays a string"` {
		t.Fatalf("final = %+v", final)
	}

	// The same cursor again returns nothing new: the answered request is not resent.
	var again pollReply
	g.call("GET", fmt.Sprintf("/v1/sessions/%s/poll?cursor=%d&wait_ms=0", s.ID, first.Cursor), s.Token, nil, 200, &again)
	if len(again.Events) != 0 || again.Cursor != r.Cursor {
		t.Fatalf("re-poll = %+v, want no events and cursor %d", again, r.Cursor)
	}
}

// TestAnswersFirstWins covers every way an answer can be judged.
func TestAnswersFirstWins(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("a")
	other := g.newSession("b")
	g.register(s, echoTool)
	g.register(other, echoTool)
	st := g.openStream(s, "")

	rec := g.startCall(s, "echo", map[string]any{"text": "x"}, 0)
	st.nextOfType("tool_call_request")
	if status, reply := g.answer(s, rec.ID, 1); status != 200 || reply["duplicate"] != nil {
		t.Fatalf("first answer: %d %v", status, reply)
	}
	// The same answer again, and a different one: duplicates, nothing changes.
	for _, out := range []any{1, 2} {
		status, reply := g.answer(s, rec.ID, out)
		if status != 200 || reply["duplicate"] != true || reply["status"] != "completed" {
			t.Fatalf("repeat answer: %d %v", status, reply)
		}
	}
	if got := g.waitCall(rec.ID); string(got.Output) != "1" {
		t.Fatalf("output = %s, want the first answer", got.Output)
	}

	// Another session cannot answer this session's call: 404.
	if status, reply := g.answer(other, rec.ID, 3); status != 404 || reply["error"].(map[string]any)["code"] != "NOT_FOUND" {
		t.Fatalf("foreign answer: %d %v", status, reply)
	}

	// A call that timed out is closed: 409 CALL_CLOSED.
	late := g.startCall(s, "echo", map[string]any{"text": "late"}, 150)
	if got := g.waitCall(late.ID); got.Status != "timed_out" || got.Error == nil || got.Error.Code != "TIMEOUT" {
		t.Fatalf("late call = %+v", got)
	}
	if ev := st.nextOfType("call_cancelled"); ev.Data["id"] != late.ID || ev.Data["reason"] != "timeout" {
		t.Fatalf("cancel event = %+v", ev)
	}
	if status, reply := g.answer(s, late.ID, "too late"); status != 409 || reply["error"].(map[string]any)["code"] != "CALL_CLOSED" {
		t.Fatalf("late answer: %d %v", status, reply)
	}

	// A tool_error with a code and details keeps both.
	failing := g.startCall(s, "echo", map[string]any{"text": "camera"}, 0)
	status, data := g.do("POST", "/v1/sessions/"+s.ID+"/results", s.Token, map[string]any{
		"type": "tool_error", "id": failing.ID, "success": false, "error": "Camera permission denied",
		"code": "AUTH_REQUIRED", "details": map[string]any{"resolution_hint": "Open the app", "authorize_intent": "com.example.AUTH"},
	})
	if status != 200 {
		t.Fatalf("tool_error: %d %s", status, data)
	}
	got := g.waitCall(failing.ID)
	if got.Status != "failed" || got.Error.Code != "AUTH_REQUIRED" || got.Error.Message != "Camera permission denied" ||
		string(got.Error.Details) != `{"authorize_intent":"com.example.AUTH","resolution_hint":"Open the app"}` {
		t.Fatalf("failed call = %+v details %s", got, got.Error.Details)
	}
}

// TestAnswerBodyShape: a body is read for its shape before its answer. One
// answer carrying a "results" that is not an array is refused and leaves
// the call open; a batch is read as a batch only, so a stray top-level
// field of one answer's kind does not refuse it.
func TestAnswerBodyShape(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("shape")
	g.register(s, echoTool)
	c := g.startCall(s, "echo", map[string]any{"text": "a"}, 0)
	results := "/v1/sessions/" + s.ID + "/results"

	status, body := g.do("POST", results, s.Token, `{"type":"tool_result","id":"`+c.ID+`","success":true,"output":1,"results":5}`)
	if status != 400 || errorCode(body) != "BAD_REQUEST" {
		t.Fatalf("one answer with results 5: %d %s", status, body)
	}
	var rec callRecord
	g.call("GET", "/v1/calls/"+c.ID, testAgentKey, nil, 200, &rec)
	if rec.Status != "pending" && rec.Status != "delivered" {
		t.Fatalf("after a refused answer the call is %s", rec.Status)
	}

	status, body = g.do("POST", results, s.Token, `{"type":"tool_results","id":5,"success":"yes","results":[{"type":"tool_result","id":"`+c.ID+`","success":true,"output":"A"}]}`)
	if status != 200 {
		t.Fatalf("batch with stray fields: %d %s", status, body)
	}
	if got := g.waitCall(c.ID); got.Status != "completed" || string(got.Output) != `"A"` {
		t.Errorf("call = %s %s", got.Status, got.Output)
	}
}

// TestBatchAnswers judges each answer of a tool_results batch on its own.
func TestBatchAnswers(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("batch")
	g.register(s, echoTool)
	a := g.startCall(s, "echo", map[string]any{"text": "a"}, 0)
	b := g.startCall(s, "echo", map[string]any{"text": "b"}, 0)
	var reply struct {
		Type    string           `json:"type"`
		Results []map[string]any `json:"results"`
	}
	g.call("POST", "/v1/sessions/"+s.ID+"/results", s.Token, map[string]any{"type": "tool_results", "results": []any{
		map[string]any{"type": "tool_result", "id": a.ID, "success": true, "output": "A"},
		map[string]any{"type": "tool_error", "id": b.ID, "success": false, "error": "no", "code": "PERMISSION_DENIED"},
		map[string]any{"type": "tool_result", "id": "00000000-0000-7000-8000-000000000000", "success": true},
		map[string]any{"type": "tool_result", "id": a.ID, "success": true, "output": "again"},
		map[string]any{"type": "tool_result", "id": 7},
	}}, 200, &reply)
	want := []string{"completed", "failed", "NOT_FOUND", "duplicate", "BAD_REQUEST"}
	if reply.Type != "results_acknowledged" || len(reply.Results) != len(want) {
		t.Fatalf("reply = %+v", reply)
	}
	for i, w := range want {
		r := reply.Results[i]
		var got string
		switch {
		case r["error"] != nil:
			got = r["error"].(map[string]any)["code"].(string)
		case r["duplicate"] == true:
			got = "duplicate"
		default:
			got = r["status"].(string)
		}
		if got != w {
			t.Errorf("answer %d: %s, want %s (%v)", i, got, w, r)
		}
	}
	if got := g.waitCall(a.ID); string(got.Output) != `"A"` {
		t.Errorf("a output = %s", got.Output)
	}
}

// TestCancelAndProgress: progress pushes the deadline out and shows on the
// record; cancel ends the call, tells the client and refuses a second cancel.
func TestCancelAndProgress(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("slow")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	rec := g.startCall(s, "echo", map[string]any{"text": "upload"}, 5000)
	st.nextOfType("tool_call_request")

	var ack struct {
		Type     string `json:"type"`
		Deadline string `json:"deadline"`
	}
	g.call("POST", "/v1/sessions/"+s.ID+"/progress", s.Token, map[string]any{
		"type": "tool_progress", "id": rec.ID, "progress": map[string]any{"current": 3, "total": 10, "message": "uploading"},
	}, 200, &ack)
	// Never earlier; later unless the report came in the call's first millisecond.
	if ack.Type != "progress_acknowledged" || ack.Deadline < rec.Deadline {
		t.Fatalf("progress ack %+v, old deadline %s", ack, rec.Deadline)
	}
	var current struct {
		Progress map[string]any `json:"progress"`
		Deadline string         `json:"deadline"`
	}
	g.call("GET", "/v1/calls/"+rec.ID, testAgentKey, nil, 200, &current)
	if current.Progress["current"] != 3.0 || current.Deadline != ack.Deadline {
		t.Fatalf("record after progress = %+v", current)
	}

	var cancelled callRecord
	g.call("POST", "/v1/calls/"+rec.ID+"/cancel", testAgentKey, nil, 200, &cancelled)
	if cancelled.Status != "cancelled" || cancelled.Error.Code != "CANCELLED" {
		t.Fatalf("cancelled = %+v", cancelled)
	}
	if ev := st.nextOfType("call_cancelled"); ev.Data["id"] != rec.ID || ev.Data["reason"] != "cancelled" {
		t.Fatalf("event = %+v", ev)
	}
	status, data := g.do("POST", "/v1/calls/"+rec.ID+"/cancel", testAgentKey, nil)
	if status != 409 || errorCode(data) != "CALL_CLOSED" {
		t.Fatalf("second cancel: %d %s", status, data)
	}
	status, data = g.do("POST", "/v1/sessions/"+s.ID+"/progress", s.Token, map[string]any{"type": "tool_progress", "id": rec.ID, "progress": map[string]any{}})
	if status != 409 || errorCode(data) != "CALL_CLOSED" {
		t.Fatalf("progress on closed call: %d %s", status, data)
	}
}

// TestReconnectReplay: a stream opened without a cursor gets the open
// calls; one opened with Last-Event-ID gets the open calls again and what
// came after, leaving out requests for calls that have ended.
func TestReconnectReplay(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("flaky")
	g.register(s, echoTool)
	open1 := g.startCall(s, "echo", map[string]any{"text": "1"}, 0)
	answered := g.startCall(s, "echo", map[string]any{"text": "2"}, 0)
	g.answer(s, answered.ID, "done")
	open3 := g.startCall(s, "echo", map[string]any{"text": "3"}, 0)

	st := g.openStream(s, "")
	st.nextOfType("ready")
	first := st.nextOfType("tool_call_request")
	second := st.nextOfType("tool_call_request")
	if first.Data["id"] != open1.ID || second.Data["id"] != open3.ID {
		t.Fatalf("open calls = %v, %v; want %s, %s", first.Data["id"], second.Data["id"], open1.ID, open3.ID)
	}
	st.Close()

	// Resume after the first: the open calls come again (the client may have
	// restarted), the answered one does not.
	st2 := g.openStream(s, first.ID)
	st2.nextOfType("ready")
	again1, again3 := st2.nextOfType("tool_call_request"), st2.nextOfType("tool_call_request")
	if again1.Data["id"] != open1.ID || again3.Data["id"] != open3.ID {
		t.Fatalf("after Last-Event-ID %s got %v, %v", first.ID, again1.Data["id"], again3.Data["id"])
	}
	// Both deliveries are recorded within moments (unanswered calls' marks
	// are written up to 100 ms after the event leaves).
	testwait.Until(t, 2*time.Second, "the call recorded delivered twice", func() bool {
		var rec callRecord
		g.call("GET", "/v1/calls/"+open3.ID, testAgentKey, nil, 200, &rec)
		return rec.Status == "delivered" && rec.Attempts == 2
	})
}

// TestIdempotencyKey: a retried POST /v1/calls with the same key returns
// the first call instead of making another.
func TestIdempotencyKey(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("idem")
	g.register(s, echoTool)
	body := map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "once"}, "wait": false}
	ids := make([]string, 3)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := mustRequest(t, "POST", g.URL+"/v1/calls", body)
			req.Header.Set("Idempotency-Key", "order-42")
			var rec callRecord
			decodeResponse(t, req, 202, &rec)
			ids[i] = rec.ID
		}()
	}
	wg.Wait()
	if ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("ids = %v, want one call", ids)
	}
	// The same key for a different call is a conflict, and stores nothing.
	other := mustRequest(t, "POST", g.URL+"/v1/calls", map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "twice"}, "wait": false})
	other.Header.Set("Idempotency-Key", "order-42")
	var conflict map[string]any
	decodeResponse(t, other, 409, &conflict)
	if conflict["error"].(map[string]any)["code"] != "CONFLICT" {
		t.Errorf("reused key: %v", conflict)
	}
	// Arguments equal as JSON, written otherwise, are the same call.
	same := mustRequest(t, "POST", g.URL+"/v1/calls", map[string]any{"session_id": s.ID, "tool": "echo", "args": json.RawMessage(`{ "text" : "once" }`), "wait": false})
	same.Header.Set("Idempotency-Key", "order-42")
	var again callRecord
	decodeResponse(t, same, 202, &again)
	if again.ID != ids[0] {
		t.Errorf("retry with reformatted args got %s, want %s", again.ID, ids[0])
	}
	var list struct {
		Calls []callRecord `json:"calls"`
	}
	g.call("GET", "/v1/calls?session_id="+s.ID, testAgentKey, nil, 200, &list)
	if len(list.Calls) != 1 {
		t.Fatalf("%d calls stored, want 1", len(list.Calls))
	}
}

// TestHistoryPaging walks GET /v1/calls newest first with next_before.
func TestHistoryPaging(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("pages")
	g.register(s, echoTool)
	var made []string
	for i := range 5 {
		made = append(made, g.startCall(s, "echo", map[string]any{"text": strconv.Itoa(i)}, 0).ID)
	}
	var seen []string
	before := ""
	for page := 0; page < 5; page++ {
		var list struct {
			Calls      []callRecord `json:"calls"`
			NextBefore *string      `json:"next_before"`
		}
		g.call("GET", "/v1/calls?tool=echo&limit=2&before="+before, testAgentKey, nil, 200, &list)
		for _, c := range list.Calls {
			seen = append(seen, c.ID)
		}
		if list.NextBefore == nil {
			break
		}
		before = *list.NextBefore
	}
	if len(seen) != 5 {
		t.Fatalf("saw %d calls, want 5", len(seen))
	}
	for i := range seen {
		if seen[i] != made[len(made)-1-i] {
			t.Fatalf("order = %v, want newest first of %v", seen, made)
		}
	}
	var pending struct {
		Calls []json.RawMessage `json:"calls"`
	}
	g.call("GET", "/v1/calls?status=pending", testAgentKey, nil, 200, &pending)
	if len(pending.Calls) != 5 {
		t.Fatalf("%d pending, want 5", len(pending.Calls))
	}
}
