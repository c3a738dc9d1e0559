package multinode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// echoTool is the tool the test clients offer: it answers with its call id.
const echoTool = "node_echo"

// httpClient is the test's HTTP client: no timeout of its own (each
// request has a context), connections kept per node.
var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

// send sends a JSON request with a bearer secret (and an Idempotency-Key
// when key is set) and returns the status and the body.
func send(ctx context.Context, method, url, secret, key string, body any) (int, []byte, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return 0, nil, err
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// mustSend is send for a request that must get want.
func mustSend(t *testing.T, method, url, secret string, body any, want int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, data, err := send(ctx, method, url, secret, "", body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, status, want, data)
	}
	return data
}

// session is a client session made by hand: its id and token.
type session struct {
	ID    string `json:"session_id"`
	Token string `json:"token"`
}

// newSession creates a session on the node at baseURL and registers
// echoTool in it.
func newSession(t *testing.T, baseURL string) session {
	t.Helper()
	var s session
	data := mustSend(t, http.MethodPost, baseURL+"/v1/sessions", "", map[string]any{
		"client": map[string]any{"name": "multinode-by-hand", "version": "1", "platform": "other"}}, http.StatusCreated)
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	mustSend(t, http.MethodPost, baseURL+"/v1/sessions/"+s.ID+"/tools", s.Token, map[string]any{
		"tools": []map[string]any{{"name": echoTool, "description": "Answers with its call id"}}}, http.StatusOK)
	return s
}

// createCall makes a call with POST /v1/calls on baseURL; with wait false
// it returns at once (202).
func createCall(ctx context.Context, baseURL, key, sessionID string, args any, timeout time.Duration, wait bool) (int, toolgate.Call, error) {
	status, data, err := send(ctx, http.MethodPost, baseURL+"/v1/calls", agentKey, key, map[string]any{
		"session_id": sessionID, "tool": echoTool, "args": args, "timeout_ms": timeout.Milliseconds(), "wait": wait})
	var call toolgate.Call
	if err == nil && (status == http.StatusOK || status == http.StatusAccepted) {
		err = json.Unmarshal(data, &call)
	} else if err == nil && status < 500 {
		err = fmt.Errorf("POST /v1/calls: %d %s", status, data)
	}
	return status, call, err
}

// readCall reads a call with GET /v1/calls/{id}, waiting up to wait for
// it to end.
func readCall(ctx context.Context, baseURL, id string, wait time.Duration) (int, toolgate.Call, error) {
	status, data, err := send(ctx, http.MethodGet, fmt.Sprintf("%s/v1/calls/%s?wait_ms=%d", baseURL, id, wait.Milliseconds()), agentKey, "", nil)
	var call toolgate.Call
	if err == nil && status == http.StatusOK {
		err = json.Unmarshal(data, &call)
	}
	return status, call, err
}

// callReply is what createCall or readCall returned, for a goroutine
// that waits on a call to hand over.
type callReply struct {
	status int
	call   toolgate.Call
	err    error
}

// answerReply is the reply to one answer.
type answerReply struct {
	Status    string `json:"status"`
	Duplicate bool   `json:"duplicate"`
	Error     struct {
		Code string `json:"code"`
	} `json:"error"`
}

// answer posts a tool_result for call id with output on baseURL.
func answer(ctx context.Context, baseURL string, s session, id string, output any) (int, answerReply, error) {
	status, data, err := send(ctx, http.MethodPost, baseURL+"/v1/sessions/"+s.ID+"/results", s.Token, "", map[string]any{
		"type": "tool_result", "id": id, "output": output})
	var reply answerReply
	if err == nil {
		if jerr := json.Unmarshal(data, &reply); jerr != nil {
			err = fmt.Errorf("answer %s: %d %s", id, status, data)
		}
	}
	return status, reply, err
}

// polledEvent is one event of a long-poll reply.
type polledEvent struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	ID   string `json:"id"`
}

// poll long-polls the session on baseURL after cursor (none when cursor
// is negative) and returns the events and the new cursor.
func poll(ctx context.Context, baseURL string, s session, cursor int64, wait time.Duration) ([]polledEvent, int64, error) {
	url := fmt.Sprintf("%s/v1/sessions/%s/poll?wait_ms=%d", baseURL, s.ID, wait.Milliseconds())
	if cursor >= 0 {
		url += fmt.Sprintf("&cursor=%d", cursor)
	}
	status, data, err := send(ctx, http.MethodGet, url, s.Token, "", nil)
	if err != nil {
		return nil, cursor, err
	}
	if status != http.StatusOK {
		return nil, cursor, fmt.Errorf("poll: %d %s", status, data)
	}
	var reply struct {
		Events []polledEvent `json:"events"`
		Cursor int64         `json:"cursor"`
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return nil, cursor, err
	}
	return reply.Events, reply.Cursor, nil
}

// echoOutput is what the clients answer: the call id, and who answered.
type echoOutput struct {
	Call string `json:"call"`
	By   string `json:"by"`
}
