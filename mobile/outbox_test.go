package mobile_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// resultsRecorder is a proxy in front of the gateway that records every
// answer post and refuses the first one with 503, as an overloaded load
// balancer would.
type resultsRecorder struct {
	mu      sync.Mutex
	posts   []string // the "type" of each answer post, in order
	sizes   []int    // how many answers each carried
	refused bool
}

func (r *resultsRecorder) wrap(forward http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.HasSuffix(req.URL.Path, "/results") {
			forward.ServeHTTP(w, req)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var msg struct {
			Type    string            `json:"type"`
			Results []json.RawMessage `json:"results"`
		}
		json.Unmarshal(body, &msg)
		r.mu.Lock()
		r.posts = append(r.posts, msg.Type)
		r.sizes = append(r.sizes, max(len(msg.Results), 1))
		refuse := !r.refused
		r.refused = true
		r.mu.Unlock()
		if refuse {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"SESSION_OFFLINE","message":"try again"}}`))
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		forward.ServeHTTP(w, req)
	})
}

func TestAnswersAreRetriedAndBatched(t *testing.T) {
	g := gatewaytest.Start(t)
	target, _ := url.Parse(g.URL)
	recorder := &resultsRecorder{}
	proxy := httptest.NewServer(recorder.wrap(httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)

	client := mobile.NewClient(proxy.URL)
	client.SetLogger(testLogger{t})
	client.SetTransport(mobile.TransportPoll)
	client.SetWorkers(5)
	t.Cleanup(client.Close)
	client.RegisterTool("square", "Squares n", `{"type":"object","properties":{"n":{"type":"integer"}}}`)
	// Every handler waits for all five calls, so the five answers are
	// ready together.
	var running atomic.Int32
	allRunning := make(chan struct{})
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) {
		if running.Add(1) == 5 {
			close(allRunning)
		}
		<-allRunning
		var args struct{ N int }
		json.Unmarshal([]byte(call.ArgsJSON()), &args)
		b, _ := json.Marshal(map[string]int{"square": args.N * args.N})
		return string(b), nil
	}))
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	sid := client.SessionID()
	var calls []toolgate.Call
	for n := 1; n <= 5; n++ {
		b, _ := json.Marshal(map[string]int{"n": n})
		calls = append(calls, startCall(t, g, sid, "square", string(b), 20000))
	}
	for i, c := range calls {
		got := getCall(t, g, c.ID, 15000)
		want, _ := json.Marshal(map[string]int{"square": (i + 1) * (i + 1)})
		if got.Status != toolgate.StatusCompleted || !jsonEqual(got.Output, string(want)) {
			t.Errorf("call %d: %s %s %+v", i+1, got.Status, got.Output, got.Error)
		}
	}
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	if len(recorder.posts) < 2 {
		t.Fatalf("answer posts %v: the refused one was not retried", recorder.posts)
	}
	batched := false
	for i, typ := range recorder.posts {
		if typ == "tool_results" && recorder.sizes[i] > 1 {
			batched = true
		}
	}
	if !batched {
		t.Errorf("answer posts %v with sizes %v: answers ready together were never sent as one tool_results", recorder.posts, recorder.sizes)
	}
}
