package mobile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate"
)

// gatewayAPI speaks the client endpoints of PROTOCOL.md for one gateway.
type gatewayAPI struct {
	baseURL string
	http    *http.Client // for requests that end promptly
	long    *http.Client // for long-polls, which the gateway holds
}

func newGatewayAPI(baseURL string) *gatewayAPI {
	return &gatewayAPI{
		baseURL: strings.TrimRight(baseURL, "/"),
		http:    &http.Client{Timeout: 30 * time.Second},
		long:    &http.Client{},
	}
}

// sessionPath returns the path of a session's endpoint.
func sessionPath(sessionID, rest string) string {
	return "/v1/sessions/" + url.PathEscape(sessionID) + rest
}

// do sends a JSON request with a bearer credential and decodes a 2xx reply
// into out. Any other reply becomes an *APIError.
func (a *gatewayAPI) do(ctx context.Context, client *http.Client, method, path, bearer string, body, out any) (*http.Response, error) {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.baseURL+path, reader)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, decodeAPIError(resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp, fmt.Errorf("toolgate gateway: %s %s: reply is not the expected JSON: %w", method, path, err)
		}
	}
	return resp, nil
}

// decodeAPIError reads the protocol's error body; a reply without one still
// becomes an *APIError with the status text.
func decodeAPIError(status int, data []byte) *APIError {
	var body toolgate.ErrorBody
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		return &APIError{Status: status, Code: body.Error.Code, Message: body.Error.Message}
	}
	return &APIError{Status: status, Code: http.StatusText(status), Message: strings.TrimSpace(string(data))}
}

// retryAfter returns the delay a 429 or 503 reply asks for, or zero.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// createSessionRequest is the body of POST /v1/sessions.
type createSessionRequest struct {
	Client   toolgate.ClientInfo `json:"client"`
	Metadata json.RawMessage     `json:"metadata,omitempty"`
}

// createSessionReply is the reply of POST /v1/sessions.
type createSessionReply struct {
	SessionID        string `json:"session_id"`
	Token            string `json:"token"`
	HeartbeatMS      int64  `json:"heartbeat_ms"`
	PollWaitMS       int64  `json:"poll_wait_ms"`
	DefaultTimeoutMS int64  `json:"default_timeout_ms"`
}

func (a *gatewayAPI) createSession(ctx context.Context, clientKey string, body createSessionRequest) (*createSessionReply, error) {
	var reply createSessionReply
	if _, err := a.do(ctx, a.http, http.MethodPost, "/v1/sessions", clientKey, body, &reply); err != nil {
		return nil, err
	}
	if reply.SessionID == "" || reply.Token == "" {
		return nil, errors.New("toolgate gateway: session created without an id or a token")
	}
	return &reply, nil
}

// registerToolsRequest is the body of POST /v1/sessions/{sid}/tools.
type registerToolsRequest struct {
	Type    string              `json:"type"`
	Replace bool                `json:"replace"`
	Tools   []toolgate.ToolSpec `json:"tools"`
}

// rejectedTool is one entry of the rejected list of tools_registered.
type rejectedTool struct {
	Name    string `json:"name"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// registerToolsReply is the tools_registered reply.
type registerToolsReply struct {
	Type       string         `json:"type"`
	Count      int            `json:"count"`
	Registered int            `json:"registered"`
	Rejected   []rejectedTool `json:"rejected"`
}

func (a *gatewayAPI) registerTools(ctx context.Context, sess sessionCredentials, replace bool, tools []toolgate.ToolSpec) (*registerToolsReply, error) {
	if tools == nil {
		tools = []toolgate.ToolSpec{}
	}
	body := registerToolsRequest{Type: "register_tools", Replace: replace, Tools: tools}
	var reply registerToolsReply
	if _, err := a.do(ctx, a.http, http.MethodPost, sessionPath(sess.id, "/tools"), sess.token, body, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// progressRequest is the body of POST /v1/sessions/{sid}/progress.
type progressRequest struct {
	Type     string         `json:"type"`
	ID       string         `json:"id"`
	Progress progressReport `json:"progress"`
}

// progressReport is the progress object of a tool_progress message.
type progressReport struct {
	Current int64  `json:"current"`
	Total   int64  `json:"total,omitempty"`
	Message string `json:"message,omitempty"`
}

func (a *gatewayAPI) reportProgress(ctx context.Context, sess sessionCredentials, callID string, report progressReport) error {
	body := progressRequest{Type: "tool_progress", ID: callID, Progress: report}
	_, err := a.do(ctx, a.http, http.MethodPost, sessionPath(sess.id, "/progress"), sess.token, body, nil)
	return err
}

// pollReply is the reply of GET /v1/sessions/{sid}/poll.
type pollReply struct {
	Events []json.RawMessage `json:"events"`
	Cursor *int64            `json:"cursor"`
}

func (a *gatewayAPI) poll(ctx context.Context, sess sessionCredentials, cursor int64, useCursor bool, wait time.Duration) (*pollReply, error) {
	q := url.Values{}
	if useCursor {
		q.Set("cursor", strconv.FormatInt(cursor, 10))
	}
	q.Set("wait_ms", strconv.FormatInt(wait.Milliseconds(), 10))
	ctx, cancel := context.WithTimeout(ctx, wait+20*time.Second)
	defer cancel()
	var reply pollReply
	if _, err := a.do(ctx, a.long, http.MethodGet, sessionPath(sess.id, "/poll?"+q.Encode()), sess.token, nil, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

func (a *gatewayAPI) closeSession(ctx context.Context, sess sessionCredentials) error {
	_, err := a.do(ctx, a.http, http.MethodPost, sessionPath(sess.id, "/close"), sess.token, struct{}{}, nil)
	return err
}

// sessionCredentials are what the client endpoints need.
type sessionCredentials struct {
	id    string
	token string
}
