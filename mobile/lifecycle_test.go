package mobile_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

func TestToolWithoutHandlerIsToolNotFound(t *testing.T) {
	g := gatewaytest.Start(t)
	client, _ := newTestClient(t, g, mobile.TransportSSE)
	if err := client.RegisterTool("orphan", "A tool nobody handles", ""); err != nil {
		t.Fatal(err)
	}
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	call := callTool(t, g, client.SessionID(), "orphan", `{}`)
	if call.Status != toolgate.StatusFailed || call.Error == nil || call.Error.Code != "TOOL_NOT_FOUND" {
		t.Fatalf("orphan: %s %+v; want failed TOOL_NOT_FOUND", call.Status, call.Error)
	}
}

func TestCancellationReachesTheHandler(t *testing.T) {
	g := gatewaytest.Start(t)
	client, _ := newTestClient(t, g, mobile.TransportSSE)
	client.SetWorkers(2)
	opts := mobile.NewToolOptions()
	opts.TimeoutMS = 500
	if err := client.RegisterToolWithOptions("wait_for_cancel", "Waits until cancelled", "", opts); err != nil {
		t.Fatal(err)
	}
	reasons := make(chan string, 2)
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		if call.WaitCancelled(20000) {
			reasons <- call.CancelReason()
		} else {
			reasons <- "not cancelled"
		}
		return `"ignored"`, nil
	}))
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	sid := client.SessionID()

	// The tool's timeout passes (the call sets none of its own).
	var timedOut toolgate.Call
	agentRequest(t, g, http.MethodPost, "/v1/calls", map[string]any{"session_id": sid, "tool": "wait_for_cancel", "args": map[string]any{}}, &timedOut)
	if timedOut.Status != toolgate.StatusTimedOut {
		t.Errorf("status %s, want timed_out", timedOut.Status)
	}
	if reason := receive(t, reasons); reason != toolgate.CancelTimeout {
		t.Errorf("handler saw %q, want %q", reason, toolgate.CancelTimeout)
	}

	// The caller cancels.
	var started toolgate.Call
	body := map[string]any{"session_id": sid, "tool": "wait_for_cancel", "args": map[string]any{}, "timeout_ms": 20000, "wait": false}
	agentRequest(t, g, http.MethodPost, "/v1/calls", body, &started)
	testwait.Until(t, 10*time.Second, "the call delivered", func() bool {
		return getCall(t, g, started.ID, 0).Status == toolgate.StatusDelivered
	})
	if status := agentRequest(t, g, http.MethodPost, "/v1/calls/"+started.ID+"/cancel", map[string]any{}, nil); status != http.StatusOK {
		t.Fatalf("cancel: status %d", status)
	}
	if reason := receive(t, reasons); reason != toolgate.CancelCancelled {
		t.Errorf("handler saw %q, want %q", reason, toolgate.CancelCancelled)
	}
	if got := getCall(t, g, started.ID, 0); got.Status != toolgate.StatusCancelled {
		t.Errorf("status %s, want cancelled (the handler's late answer must not change it)", got.Status)
	}
}

func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(15 * time.Second):
		t.Fatal("nothing received in 15s")
	}
	return ""
}

func TestProgressReachesTheCaller(t *testing.T) {
	g := gatewaytest.Start(t)
	client, _ := newTestClient(t, g, mobile.TransportPoll)
	if err := client.RegisterTool("upload", "Uploads in steps", ""); err != nil {
		t.Fatal(err)
	}
	finish := make(chan struct{})
	progressErr := make(chan error, 1)
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		progressErr <- call.ReportProgress(3, 10, "uploading")
		<-finish
		return `{"uploaded":10}`, nil
	}))
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	call := startCall(t, g, client.SessionID(), "upload", `{}`, 15000)
	select {
	case err := <-progressErr:
		if err != nil {
			t.Fatalf("ReportProgress: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the handler never ran")
	}
	var progress struct {
		Current int64  `json:"current"`
		Total   int64  `json:"total"`
		Message string `json:"message"`
	}
	got := getCall(t, g, call.ID, 0)
	if err := json.Unmarshal(got.Progress, &progress); err != nil || progress.Current != 3 || progress.Total != 10 || progress.Message != "uploading" {
		t.Errorf("call record progress %s (%v)", got.Progress, err)
	}
	close(finish)
	if done := getCall(t, g, call.ID, 10000); done.Status != toolgate.StatusCompleted {
		t.Errorf("status %s", done.Status)
	}
}

// A proxy that holds a stream's body back (as some buffering proxies do)
// sends no ready event; the automatic transport then long-polls through the
// same proxy.
func TestHeldBackStreamFallsBackToLongPoll(t *testing.T) {
	g := gatewaytest.Start(t)
	target, _ := url.Parse(g.URL)
	forward := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	client, states := connectEcho(t, proxy.URL, func(c *mobile.Client) { c.SetReadyTimeoutMS(300) }, "connected poll", 10*time.Second)
	if states.has("connected sse") {
		t.Error("the held-back stream counted as connected")
	}
	if call := callTool(t, g, client.SessionID(), "echo", `{"via":"poll"}`); call.Status != toolgate.StatusCompleted || !jsonEqual(call.Output, `{"via":"poll"}`) {
		t.Errorf("echo through the fallback: %s %s", call.Status, call.Output)
	}
}

func TestClientSurvivesGatewayRestart(t *testing.T) {
	g := gatewaytest.Start(t)
	client, _ := connectEcho(t, g.URL, func(c *mobile.Client) { setTransport(t, c, mobile.TransportSSE) }, "connected sse", 10*time.Second)
	sid := client.SessionID()
	g.Restart(t)
	testwait.Until(t, 15*time.Second, "the tool online again", func() bool { return sessionTools(t, g, sid)["echo"].Online })
	if call := callTool(t, g, sid, "echo", `{"after":"restart"}`); call.Status != toolgate.StatusCompleted || !jsonEqual(call.Output, `{"after":"restart"}`) {
		t.Errorf("echo after the gateway restart: %s %s %+v", call.Status, call.Output, call.Error)
	}
	if client.SessionID() != sid {
		t.Errorf("the client moved to session %s; the gateway's restart should keep %s", client.SessionID(), sid)
	}
}

// A stored session the gateway does not know is replaced by a new one; a
// session closed while connected is replaced too, with the tools
// registered again.
func TestRefusedSessionIsReplaced(t *testing.T) {
	g := gatewaytest.Start(t)
	store := mobile.NewMemorySessionStore()
	store.Save(&mobile.SessionState{GatewayURL: g.URL, SessionID: "01a1fe00-0000-7000-8000-000000000000", Token: "not-a-token"})
	client, _ := newTestClient(t, g, mobile.TransportSSE)
	client.SetSessionStore(store)
	client.RegisterTool("echo", "Echo", "")
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) { return call.ArgsJSON(), nil }))
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	first := client.SessionID()
	if first == "01a1fe00-0000-7000-8000-000000000000" {
		t.Fatal("the client kept a session the gateway does not know")
	}
	if saved, _ := store.Load(); saved == nil || saved.SessionID != first {
		t.Fatalf("the store holds %+v, want the new session %s", saved, first)
	}

	saved, _ := store.Load()
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/sessions/"+first+"/close", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+saved.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		t.Fatalf("closing the session: status %d", resp.StatusCode)
	}
	testwait.Until(t, 15*time.Second, "a new session", func() bool { return client.SessionID() != first })
	second := client.SessionID()
	testwait.Until(t, 10*time.Second, "echo on the new session", func() bool { return sessionTools(t, g, second)["echo"].Online })
	if call := callTool(t, g, second, "echo", `{"n":2}`); call.Status != toolgate.StatusCompleted {
		t.Errorf("echo on the new session: %s %+v", call.Status, call.Error)
	}
}

func TestClientKeyIsRequiredWhenConfigured(t *testing.T) {
	g := gatewaytest.Start(t, "--client-key", "ck_test")
	client, _ := newTestClient(t, g, mobile.TransportSSE)
	err := client.Connect()
	var apiErr *mobile.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
		t.Fatalf("Connect without the client key: %v; want a 401 APIError", err)
	}
	if client.State() != mobile.StateIdle {
		t.Errorf("state after a failed Connect: %s", client.State())
	}
	client.SetClientKey("ck_test")
	if err := client.Connect(); err != nil {
		t.Fatalf("Connect with the client key: %v", err)
	}
}

func TestEndSessionClosesItAtTheGatewayAndForgetsIt(t *testing.T) {
	g := gatewaytest.Start(t)
	store := mobile.NewFileSessionStore(t.TempDir() + "/session.json")
	client, states := newTestClient(t, g, mobile.TransportSSE)
	client.SetSessionStore(store)
	client.RegisterTool("echo", "Echo", "")
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	sid := client.SessionID()
	if len(sessionTools(t, g, sid)) != 1 {
		t.Fatal("echo not registered")
	}
	if err := client.EndSession(); err != nil {
		t.Fatal(err)
	}
	var all struct {
		Tools []toolgate.ToolInfo `json:"tools"`
	}
	agentRequest(t, g, http.MethodGet, "/api/tools", nil, &all)
	for _, tool := range all.Tools {
		if tool.Source.SessionID == sid {
			t.Errorf("after EndSession the gateway still lists %s", tool.Name)
		}
	}
	if state, err := store.Load(); state != nil || err != nil {
		t.Errorf("after EndSession the store holds %+v (%v)", state, err)
	}
	if !states.has("closed") {
		t.Error("the listener was not told the client closed")
	}
}
