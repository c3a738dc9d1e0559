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

// gatewayAPI speaks the client endpoints of docs/PROTOCOL.md for one gateway.
type gatewayAPI struct {
	baseURL   string
	transport *http.Transport // this client's own connections
	http      *http.Client    // for requests that end promptly
	long      *http.Client    // for the stream and long-polls, which the gateway holds
}

// idleConnsPerClient is how many connections to the gateway a client keeps
// open between requests: enough for its stream or poll, its answers posted
// while others are in flight, and its progress reports. (The shared
// default keeps two per host for the whole process, so an app with several
// clients, or one answering on several workers, would dial a new
// connection for most answers.)
const idleConnsPerClient = 16

func newGatewayAPI(baseURL string) *gatewayAPI {
	var t *http.Transport
	if d, ok := http.DefaultTransport.(*http.Transport); ok {
		t = d.Clone() // the app's proxy and TLS settings, as they are now
	} else {
		// The app replaced the default with a wrapper of its own; start
		// from net/http's defaults.
		t = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	t.MaxIdleConnsPerHost = idleConnsPerClient
	return &gatewayAPI{
		baseURL:   strings.TrimRight(baseURL, "/"),
		transport: t,
		http:      &http.Client{Transport: t, Timeout: 30 * time.Second},
		long:      &http.Client{Transport: t},
	}
}

// closeIdle closes the connections kept for the next request (when the
// client closes; it can connect again).
func (a *gatewayAPI) closeIdle() { a.transport.CloseIdleConnections() }

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
	if body != nil || method == http.MethodPost {
		// Every POST is declared JSON, with a body or without: the
		// gateway refuses any other (415).
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
		return resp, decodeReplyError(resp, data)
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

// decodeReplyError is decodeAPIError of a reply, with the wait its
// Retry-After asks for.
func decodeReplyError(resp *http.Response, data []byte) *APIError {
	apiErr := decodeAPIError(resp.StatusCode, data)
	apiErr.retryAfter = retryAfter(resp)
	return apiErr
}

// maxRetryAfter bounds the wait a Retry-After can impose, so that a
// confused proxy's date cannot park the client for days.
const maxRetryAfter = 10 * time.Minute

// retryAfter returns the delay a 429 or 503 reply asks for (Retry-After in
// seconds or as an HTTP date), or zero.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return min(time.Duration(s)*time.Second, maxRetryAfter)
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(at), 0), maxRetryAfter)
	}
	return 0
}

func (a *gatewayAPI) createSession(ctx context.Context, clientKey string, body toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error) {
	var reply toolgate.SessionCreated
	if _, err := a.do(ctx, a.http, http.MethodPost, "/v1/sessions", clientKey, body, &reply); err != nil {
		return nil, err
	}
	if reply.SessionID == "" || reply.Token == "" {
		return nil, errors.New("toolgate gateway: session created without an id or a token")
	}
	return &reply, nil
}

func (a *gatewayAPI) registerTools(ctx context.Context, sess sessionCredentials, replace bool, tools []toolgate.ToolSpec) (*toolgate.ToolsRegistered, error) {
	if tools == nil {
		tools = []toolgate.ToolSpec{}
	}
	body := toolgate.RegisterToolsRequest{Type: "register_tools", Replace: replace, Tools: tools}
	var reply toolgate.ToolsRegistered
	if _, err := a.do(ctx, a.http, http.MethodPost, sessionPath(sess.id, "/tools"), sess.token, body, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// progressReport is the progress object of a tool_progress message.
type progressReport struct {
	Current int64  `json:"current"`
	Total   int64  `json:"total,omitempty"`
	Message string `json:"message,omitempty"`
}

func (a *gatewayAPI) reportProgress(ctx context.Context, sess sessionCredentials, callID string, report progressReport) error {
	progress, err := json.Marshal(report)
	if err != nil {
		return err
	}
	body := toolgate.ProgressReport{Type: "tool_progress", ID: callID, Progress: progress}
	_, err = a.do(ctx, a.http, http.MethodPost, sessionPath(sess.id, "/progress"), sess.token, body, nil)
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
