package mobile_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// stallingProxy passes everything to the gateway, except that the first
// event stream goes silent right after its ready event, as a connection
// that dies without being closed does.
type stallingProxy struct {
	gateway string
	forward http.Handler
	streams atomic.Int32
}

func (p *stallingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/events") || p.streams.Add(1) > 1 {
		p.forward.ServeHTTP(w, r)
		return
	}
	up, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, p.gateway+r.URL.RequestURI(), nil)
	up.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(up)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	lines := bufio.NewReader(resp.Body)
	sawReady := false
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			return
		}
		w.Write([]byte(line))
		if strings.HasPrefix(line, "event: ready") {
			sawReady = true
		}
		if sawReady && line == "\n" {
			break
		}
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done() // silence: no ping, no call
}

func TestStalledStreamIsReplaced(t *testing.T) {
	g := gatewaytest.Start(t, "--heartbeat", "200ms")
	target, _ := url.Parse(g.URL)
	stalling := &stallingProxy{gateway: g.URL, forward: httputil.NewSingleHostReverseProxy(target)}
	proxy := httptest.NewServer(stalling)
	t.Cleanup(proxy.Close)

	client, states := connectEcho(t, proxy.URL, func(c *mobile.Client) {
		setTransport(t, c, mobile.TransportSSE)
		c.SetReadyTimeoutMS(300)
	}, "connected sse", 10*time.Second)
	// Made while the first stream is silent: the gateway writes it into
	// the dead stream; the client must still get it.
	call := startCall(t, g, client.SessionID(), "echo", `{"through":"the stall"}`, 20000)
	done := getCall(t, g, call.ID, 15000)
	if done.Status != toolgate.StatusCompleted || !jsonEqual(done.Output, `{"through":"the stall"}`) {
		t.Fatalf("call made during the stall: %s %s", done.Status, done.Output)
	}
	if n := stalling.streams.Load(); n < 2 {
		t.Errorf("%d stream connection(s); the stalled one was not replaced", n)
	}
	states.mu.Lock()
	defer states.mu.Unlock()
	stalled := false
	for _, change := range states.changes {
		if strings.HasPrefix(change, "reconnecting no event or ping") {
			stalled = true
		}
	}
	if !stalled {
		t.Errorf("the listener heard %q, with no stall", states.changes)
	}
}
