package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// chatRequest is a chat-completions request as the fake model server
// receives it.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// chatMessage is one message of the conversation on the wire.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCallID string         `json:"tool_call_id"`
	ToolCalls  []chatToolCall `json:"tool_calls"`
}

// Text is the message's content as text (a string, or text parts).
func (m chatMessage) Text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok {
				fmt.Fprint(&b, part["text"])
			}
		}
		return b.String()
	}
	return ""
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// modelTurn is what the fake model answers: text, or tool calls.
type modelTurn struct {
	Content   string
	ToolCalls []chatToolCall
}

// callTool builds a tool call of a model turn.
func callTool(id, name, args string) chatToolCall {
	tc := chatToolCall{ID: id, Type: "function"}
	tc.Function.Name, tc.Function.Arguments = name, args
	return tc
}

// fakeModel is an OpenAI-compatible chat-completions server: it stands in
// for the external model and speaks its real wire format, tool calls
// included. reply decides each turn from the request; every request is
// kept for the test to look at.
type fakeModel struct {
	t     testing.TB
	URL   string // base URL, ending in /v1
	reply func(req chatRequest) modelTurn

	mu        sync.Mutex
	requests  []chatRequest
	bodyBytes int64         // the bytes of the requests' bodies, in all
	arrived   chan struct{} // one signal per request
}

func startFakeModel(t testing.TB, reply func(req chatRequest) modelTurn) *fakeModel {
	t.Helper()
	m := &fakeModel{t: t, reply: reply, arrived: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	m.URL = srv.URL + "/v1"
	return m
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"no such route","type":"invalid_request_error"}}`, 404)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, 400)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.bodyBytes += int64(len(body))
	n := len(m.requests)
	m.mu.Unlock()
	turn := m.reply(req)
	msg := map[string]any{"role": "assistant", "content": nil}
	finish := "tool_calls"
	if len(turn.ToolCalls) == 0 {
		msg["content"], finish = turn.Content, "stop"
	} else {
		msg["tool_calls"] = turn.ToolCalls
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	m.arrived <- struct{}{}
}

// BodyBytes returns the bytes of the requests' bodies received so far.
func (m *fakeModel) BodyBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bodyBytes
}

// Requests returns the requests received so far.
func (m *fakeModel) Requests() []chatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]chatRequest(nil), m.requests...)
}

// lastMessage is the last message of a request.
func lastMessage(req chatRequest) chatMessage { return req.Messages[len(req.Messages)-1] }

// toolThenAnswer is a model that asks for the calls once, then answers
// with "done: " and the tool messages' contents joined by " | ".
func toolThenAnswer(calls ...chatToolCall) func(chatRequest) modelTurn {
	return func(req chatRequest) modelTurn {
		if lastMessage(req).Role != "tool" {
			return modelTurn{ToolCalls: calls}
		}
		var parts []string
		for _, msg := range req.Messages {
			if msg.Role == "tool" {
				parts = append(parts, msg.Text())
			}
		}
		return modelTurn{Content: "done: " + strings.Join(parts, " | ")}
	}
}

// modelGateway starts an in-process gateway pointed at the fake model.
func modelGateway(t testing.TB, m *fakeModel, configure func(*serverConfig)) *gateway {
	return startGateway(t, func(c *serverConfig) {
		c.LLMBaseURL, c.LLMModel = m.URL, "fake-model"
		if configure != nil {
			configure(c)
		}
	})
}

// runStream starts a run with Accept: text/event-stream and returns its
// event stream.
func (g *gateway) runStream(path, secret string, body any) *stream {
	g.t.Helper()
	data, _ := json.Marshal(body)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+path, strings.NewReader(string(data)))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	return g.sseRequest(req, cancel)
}

// followRun opens GET /v1/runs/{id} as an event stream.
func (g *gateway) followRun(id string) *stream {
	g.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", g.URL+"/v1/runs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Accept", "text/event-stream")
	return g.sseRequest(req, cancel)
}

func (g *gateway) sseRequest(req *http.Request, cancel context.CancelFunc) *stream {
	g.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		g.t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		cancel()
		g.t.Fatalf("%s %s: status %d %s: %s", req.Method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	st := &stream{t: g.t, resp: resp, events: make(chan sseEvent, 256), cancel: cancel, Header: resp.Header}
	go st.read()
	g.t.Cleanup(st.Close)
	return st
}

// runRecord is the part of a run record tests look at.
type runRecord struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Steps    int    `json:"steps"`
	Output   string `json:"output"`
	MaxSteps int    `json:"max_steps"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Messages []chatMessage `json:"messages"`
	Calls    []struct {
		ID        string `json:"id"`
		Tool      string `json:"tool"`
		Status    string `json:"status"`
		RunID     string `json:"run_id"`
		SessionID string `json:"session_id"`
	} `json:"calls"`
}

func (g *gateway) getRun(id string) runRecord {
	g.t.Helper()
	var run runRecord
	g.call("GET", "/v1/runs/"+id, testAgentKey, nil, 200, &run)
	return run
}

// untilRunEvent reads run events until one of the type, returning all read.
func (s *stream) untilRunEvent(typ string) []sseEvent {
	s.t.Helper()
	var seen []sseEvent
	for {
		ev := s.next()
		seen = append(seen, ev)
		if ev.Event == typ {
			return seen
		}
		if ev.Event == "run_failed" || ev.Event == "run_finished" {
			s.t.Fatalf("run ended with %s while waiting for %s: %s", ev.Event, typ, ev.Raw)
		}
	}
}

// db opens the gateway's database for reading, closed when the test ends.
func (g *gateway) db(t testing.TB) *sqlx.DB {
	t.Helper()
	db := sqlx.MustOpen("sqlite", g.DBPath)
	t.Cleanup(func() { db.Close() })
	return db
}
