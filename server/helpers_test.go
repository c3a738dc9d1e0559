package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/server"
)

// testAgentKey is the agent key of every test gateway.
const testAgentKey = server.AgentKeyForTest

// gateway is a real gateway for one test: the HTTP server on a loopback
// port, the SQLite file in the test's temp dir.
type gateway struct {
	t      testing.TB
	URL    string
	Server *server.Server
	DBPath string
}

// startGateway starts a gateway with server.ConfigForTest's settings,
// which configure may change first; it stops when the test ends.
func startGateway(t testing.TB, configure func(*server.Config)) *gateway {
	t.Helper()
	cfg := server.ConfigForTest(t)
	if configure != nil {
		configure(&cfg)
	}
	srv, _ := server.StartForTest(t, cfg)
	return &gateway{t: t, URL: srv.URL(), Server: srv, DBPath: cfg.DBPath}
}

// do sends a request with a JSON body (a string or []byte is sent as is)
// and returns the status and the body.
func (g *gateway) do(method, path, secret string, body any) (int, []byte) {
	g.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			g.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, g.URL+path, r)
	if err != nil {
		g.t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// call is do with the reply decoded into out and the status checked.
func (g *gateway) call(method, path, secret string, body any, wantStatus int, out any) {
	g.t.Helper()
	status, data := g.do(method, path, secret, body)
	if status != wantStatus {
		g.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, wantStatus, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			g.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

// session is a client's session: id and token.
type session struct {
	ID    string `json:"session_id"`
	Token string `json:"token"`
}

func (g *gateway) newSession(name string) session {
	g.t.Helper()
	var s session
	g.call("POST", "/v1/sessions", "", map[string]any{"client": map[string]any{"name": name, "platform": "desktop"}}, 201, &s)
	return s
}

// echoTool is a tool with a required string argument.
var echoTool = map[string]any{
	"name": "echo", "description": "Echo the text back",
	"parameters": map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"},
	},
}

func (g *gateway) register(s session, tools ...any) map[string]any {
	g.t.Helper()
	var reply map[string]any
	g.call("POST", "/v1/sessions/"+s.ID+"/tools", s.Token, map[string]any{"type": "register_tools", "tools": tools}, 200, &reply)
	return reply
}

// callRecord is the part of a call record tests look at.
type callRecord struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Output   json.RawMessage `json:"output"`
	Attempts int             `json:"attempts"`
	Deadline string          `json:"deadline"`
	Error    *struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

// startCall creates a call without waiting and returns its record.
func (g *gateway) startCall(s session, tool string, args any, timeoutMS int) callRecord {
	g.t.Helper()
	body := map[string]any{"session_id": s.ID, "tool": tool, "args": args, "wait": false}
	if timeoutMS > 0 {
		body["timeout_ms"] = timeoutMS
	}
	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, body, 202, &rec)
	return rec
}

// waitCall re-attaches to a call until it ends.
func (g *gateway) waitCall(id string) callRecord {
	g.t.Helper()
	var rec callRecord
	g.call("GET", "/v1/calls/"+id+"?wait_ms=10000", testAgentKey, nil, 200, &rec)
	return rec
}

// answer posts a tool_result and returns the status and reply.
func (g *gateway) answer(s session, callID string, output any) (int, map[string]any) {
	g.t.Helper()
	status, data := g.do("POST", "/v1/sessions/"+s.ID+"/results", s.Token,
		map[string]any{"type": "tool_result", "id": callID, "success": true, "output": output})
	var reply map[string]any
	json.Unmarshal(data, &reply)
	return status, reply
}

// sseEvent is one event read from a stream.
type sseEvent struct {
	ID    string
	Event string
	Data  map[string]any
	Raw   string
}

// stream is an open SSE connection read by a goroutine.
type stream struct {
	t      testing.TB
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
	once   sync.Once
	Header http.Header
}

// openStream connects to a session's stream; lastEventID may be empty.
func (g *gateway) openStream(s session, lastEventID string) *stream {
	g.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", g.URL+"/v1/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	return g.readStream(req, cancel)
}

// readStream sends req, which cancel ends, and reads its reply as a
// stream, failing unless it is 200.
func (g *gateway) readStream(req *http.Request, cancel context.CancelFunc) *stream {
	g.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		g.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		cancel()
		g.t.Fatalf("%s %s: status %d: %s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	st := &stream{t: g.t, resp: resp, events: make(chan sseEvent, 256), cancel: cancel, Header: resp.Header}
	go st.read()
	g.t.Cleanup(st.Close)
	return st
}

func (s *stream) read() {
	defer close(s.events)
	sc := bufio.NewScanner(s.resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Event != "" || ev.Raw != "" {
				if ev.Raw != "" {
					json.Unmarshal([]byte(ev.Raw), &ev.Data)
				}
				s.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Raw = line[6:]
		}
	}
}

// next returns the next event other than ping, failing after 10 s.
func (s *stream) next() sseEvent {
	s.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatal("stream ended")
			}
			if ev.Event == "ping" {
				continue
			}
			return ev
		case <-timeout:
			s.t.Fatal("no event within 10s")
		}
	}
}

// nextOfType skips events until one of the type.
func (s *stream) nextOfType(typ string) sseEvent {
	s.t.Helper()
	for {
		if ev := s.next(); ev.Event == typ {
			return ev
		}
	}
}

// ended reports whether the stream ends (the server closed it) within 5 s.
func (s *stream) ended() bool {
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// Close ends the stream from the client's side.
func (s *stream) Close() {
	s.once.Do(func() {
		s.cancel()
		s.resp.Body.Close()
	})
}

// errorCode extracts the error code from an error body.
func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return "not JSON: " + string(body)
	}
	return e.Error.Code
}

func mustRequest(t testing.TB, method, url string, body any) *http.Request {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Content-Type", "application/json")
	return req
}

func decodeResponse(t testing.TB, req *http.Request, wantStatus int, out any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Errorf("%s %s: %d, want %d: %s", req.Method, req.URL.Path, resp.StatusCode, wantStatus, data)
		return
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Error(err)
	}
}

// serverConfig is server.Config, named short for test set-up functions.
type serverConfig = server.Config
