package handlers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// ackAll acknowledges each answer as completed.
func ackAll(_ string, answers []toolgate.Answer) ([]toolgate.AnswerAck, error) {
	acks := make([]toolgate.AnswerAck, len(answers))
	for i, a := range answers {
		acks[i] = toolgate.AnswerAck{ID: a.ID, Status: toolgate.StatusCompleted}
	}
	return acks, nil
}

func TestAnswers(t *testing.T) {
	answers := func(f fakeAnswers) fakeEngine { return fakeEngine{Answers: &f} }
	acking := answers(fakeAnswers{submit: ackAll})
	results := func(body string) request {
		return request{method: "POST", path: "/v1/sessions/" + sid1 + "/results", headers: asSession(sid1), body: body}
	}
	tooMany := `{"type":"tool_results","results":[` + strings.Repeat(`{},`, 1000) + `{}]}`
	runScenarios(t, []scenario{
		{name: "one result", engine: acking,
			request: results(`{"type":"tool_result","id":"c1","output":{"text":"hi"}}`),
			status:  200, body: `{"type":"result_acknowledged","id":"c1","status":"completed"}` + "\n"},
		{name: "one error", engine: acking,
			request: results(`{"type":"tool_error","id":"c1","error":"no such page","code":"NOT_FOUND"}`),
			status:  200, body: `{"type":"result_acknowledged","id":"c1","status":"completed"}` + "\n"},
		{name: "one duplicate", engine: answers(fakeAnswers{submit: func(string, []toolgate.Answer) ([]toolgate.AnswerAck, error) {
			return []toolgate.AnswerAck{{ID: "c1", Status: toolgate.StatusCompleted, Duplicate: true}}, nil
		}}),
			request: results(`{"type":"tool_result","id":"c1"}`),
			status:  200, body: `{"type":"result_acknowledged","id":"c1","status":"completed","duplicate":true}` + "\n"},
		{name: "one answer the engine refuses is an error reply",
			engine: answers(fakeAnswers{submit: func(string, []toolgate.Answer) ([]toolgate.AnswerAck, error) {
				return []toolgate.AnswerAck{{ID: "c1", Error: toolgate.Errorf(toolgate.ECallClosed, "call c1 has ended")}}, nil
			}}),
			request: results(`{"type":"tool_result","id":"c1"}`),
			status:  409, body: errorBody(toolgate.ECallClosed, "call c1 has ended")},
		{name: "one answer with a malformed results field", engine: acking,
			request: results(`{"type":"tool_result","id":"c1","results":{}}`),
			status:  400, body: errorBody(toolgate.EBadRequest, `field "results" must be an array, not object`)},
		{name: "one answer of the wrong shape", engine: acking,
			request: results(`{"type":"tool_result","id":7}`),
			status:  400, body: errorBody(toolgate.EBadRequest, `field "id" must be a string, not number`)},
		{name: "no body", engine: acking,
			request: results(""),
			status:  400, body: errorBody(toolgate.EBadRequest, "a JSON body is required")},
		{name: "not JSON", engine: acking,
			request: results("ok"),
			status:  400, body: errorBody(toolgate.EBadRequest, "the body is not valid JSON (at byte 1): invalid character 'o' looking for beginning of value")},
		{name: "the engine fails",
			engine: answers(fakeAnswers{submit: func(string, []toolgate.Answer) ([]toolgate.AnswerAck, error) {
				return nil, toolgate.Errorf(toolgate.ENotFound, "no session s1")
			}}),
			request: results(`{"type":"tool_result","id":"c1"}`),
			status:  404, body: errorBody(toolgate.ENotFound, "no session s1")},

		{name: "a batch with one bad answer in it", engine: acking,
			request: results(`{"type":"tool_results","results":[{"type":"tool_result","id":"a"},{"type":"tool_result","id":5},{"type":"tool_error","id":"b","error":"boom"}]}`),
			status:  200, body: `{"results":[{"id":"a","status":"completed"},{"id":"","error":{"code":"BAD_REQUEST","message":"field \"id\" must be a string, not number"}},{"id":"b","status":"completed"}],"type":"results_acknowledged"}` + "\n"},
		{name: "a batch whose acks carry errors",
			engine: answers(fakeAnswers{submit: func(string, []toolgate.Answer) ([]toolgate.AnswerAck, error) {
				return []toolgate.AnswerAck{{ID: "a", Error: toolgate.Errorf(toolgate.ECallClosed, "call a has ended")}}, nil
			}}),
			request: results(`{"type":"tool_results","results":[{"type":"tool_result","id":"a"}]}`),
			status:  200, body: `{"results":[{"id":"a","error":{"code":"CALL_CLOSED","message":"call a has ended"}}],"type":"results_acknowledged"}` + "\n"},
		{name: "an empty batch", engine: acking,
			request: results(`{"type":"tool_results","results":[]}`),
			status:  200, body: `{"results":[],"type":"results_acknowledged"}` + "\n"},
		{name: "a batch without results", engine: acking,
			request: results(`{"type":"tool_results"}`),
			status:  400, body: errorBody(toolgate.EBadRequest, "tool_results needs a results array")},
		{name: "a batch of more than 1000", engine: acking,
			request: results(tooMany),
			status:  400, body: errorBody(toolgate.EBadRequest, "at most 1000 answers per request")},
		{name: "a batch the engine fails",
			engine: answers(fakeAnswers{submit: func(string, []toolgate.Answer) ([]toolgate.AnswerAck, error) {
				return nil, toolgate.Errorf(toolgate.EInternal, "store closed")
			}}),
			request: results(`{"type":"tool_results","results":[{"id":"a"}]}`),
			status:  500, body: errorBody(toolgate.EInternal, "store closed")},

		{name: "progress", engine: answers(fakeAnswers{progress: func(sid string, p toolgate.ProgressReport) (*toolgate.ProgressAck, error) {
			return &toolgate.ProgressAck{Type: "progress_acknowledged", ID: p.ID, Deadline: toolgate.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))}, nil
		}}),
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/progress", headers: asSession(sid1), body: `{"type":"progress","id":"c1","progress":{"done":3,"of":10}}`},
			status:  200, body: `{"type":"progress_acknowledged","id":"c1","deadline":"2025-01-02T03:04:05.000Z"}` + "\n"},
		{name: "progress of a call that has ended",
			engine: answers(fakeAnswers{progress: func(string, toolgate.ProgressReport) (*toolgate.ProgressAck, error) {
				return nil, toolgate.Errorf(toolgate.ECallClosed, "call c1 has ended")
			}}),
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/progress", headers: asSession(sid1), body: `{"id":"c1"}`},
			status:  409, body: errorBody(toolgate.ECallClosed, "call c1 has ended")},
		{name: "progress that is not JSON",
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/progress", headers: asSession(sid1), body: `{"id":`},
			status:  400, body: errorBody(toolgate.EBadRequest, "the body is not valid JSON: it ends too early")},
	})
}

// TestAnswersReceive checks what the engine is handed: the session of the
// path and the parsed answers, the bad ones of a batch left out.
func TestAnswersReceive(t *testing.T) {
	type submission struct {
		sid     string
		answers []toolgate.Answer
	}
	type report struct {
		sid string
		p   toolgate.ProgressReport
	}
	var submissions received[submission]
	var reports received[report]
	ts := newTestServer(t, fakeEngine{Answers: &fakeAnswers{
		submit: func(sid string, answers []toolgate.Answer) ([]toolgate.AnswerAck, error) {
			submissions.put(submission{sid, answers})
			return ackAll(sid, answers)
		},
		progress: func(sid string, p toolgate.ProgressReport) (*toolgate.ProgressAck, error) {
			reports.put(report{sid, p})
			return &toolgate.ProgressAck{}, nil
		},
	}}, nil, false)
	s4 := asSession(sid4)

	ts.call(t, request{method: "POST", path: "/v1/sessions/" + sid4 + "/results", headers: s4,
		body: `{"type":"tool_error","id":"c1","success":false,"error":"no page","code":"NOT_FOUND","details":{"url":"/x"}}`})
	got := submissions.only(t)
	if got.sid != sid4 || len(got.answers) != 1 {
		t.Fatalf("the engine got %+v", got)
	}
	a := got.answers[0]
	if a.Type != "tool_error" || a.ID != "c1" || a.Success == nil || *a.Success || a.Error != "no page" || a.Code != "NOT_FOUND" || string(a.Details) != `{"url":"/x"}` {
		t.Errorf("the engine got the answer %+v", a)
	}

	submissions = received[submission]{}
	ts.call(t, request{method: "POST", path: "/v1/sessions/" + sid4 + "/results", headers: s4,
		body: `{"type":"tool_results","results":[{"type":"tool_result","id":"a","output":[1,2]},"not an answer",{"type":"tool_result","id":"b","output":null}]}`})
	got = submissions.only(t)
	if len(got.answers) != 2 || got.answers[0].ID != "a" || string(got.answers[0].Output) != "[1,2]" || got.answers[1].ID != "b" {
		t.Errorf("the batch reached the engine as %+v", got.answers)
	}

	ts.call(t, request{method: "POST", path: "/v1/sessions/" + sid4 + "/progress", headers: s4,
		body: `{"type":"progress","id":"c2","progress":{"done":3}}`})
	r := reports.only(t)
	if r.sid != sid4 || r.p.ID != "c2" || r.p.Type != "progress" || string(r.p.Progress) != `{"done":3}` {
		t.Errorf("the engine got the report %+v", r)
	}
}
