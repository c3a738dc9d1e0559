package mobile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// ignoreAccelBuffering is the nginx setting that makes it buffer the
// event stream although the gateway asks it not to.
const ignoreAccelBuffering = "proxy_ignore_headers X-Accel-Buffering;"

// TestBehindBufferingProxyTheClientPolls runs a client with default
// settings behind nginx that buffers the event stream (gzip on
// text/event-stream, X-Accel-Buffering ignored), holding even the reply's
// headers until it cuts the connection:
//   - at 8 s, after the client's ready timeout (3 s from the request
//     written): the client moves to the long-poll within a few seconds;
//   - at 2 s, before the ready timeout: the ready comes only with the
//     stream's end, and the client moves to the long-poll too.
//
// Either way each call is then answered within a couple of seconds, never
// held until the proxy's next cut.
func TestBehindBufferingProxyTheClientPolls(t *testing.T) {
	for _, cut := range []time.Duration{8 * time.Second, 2 * time.Second} {
		t.Run(fmt.Sprintf("cut at %s", cut), func(t *testing.T) {
			g := gatewaytest.Start(t)
			p := startNginx(t, "buffering-timeout.conf.template", strings.TrimPrefix(g.URL, "http://"), cut, ignoreAccelBuffering)
			started := time.Now()
			// Ready timeout 3 s plus a tick, or the cut at 2 s: well
			// before 8 s either way.
			client, _ := connectEcho(t, p.URL, nil, "connected poll", 7*time.Second)
			t.Logf("on the long-poll %s after Connect", time.Since(started).Round(time.Millisecond))
			var info struct {
				Transport string `json:"transport"`
				Probing   bool   `json:"probing"`
			}
			if err := json.Unmarshal([]byte(client.ConnectionInfo()), &info); err != nil || info.Transport != mobile.TransportPoll || !info.Probing {
				t.Errorf("ConnectionInfo %s (%v): want the poll, probing", client.ConnectionInfo(), err)
			}
			// Calls across more than one of the proxy's cuts of held polls.
			var slowest time.Duration
			defer func() { t.Logf("slowest call: %s", slowest.Round(time.Millisecond)) }()
			for i := range 6 {
				time.Sleep(time.Duration(i%3) * time.Second)
				sent := time.Now()
				call := callTool(t, g, client.SessionID(), "echo", fmt.Sprintf(`{"i":%d}`, i))
				took := time.Since(sent)
				slowest = max(slowest, took)
				if call.Status != toolgate.StatusCompleted || !jsonEqual(call.Output, fmt.Sprintf(`{"i":%d}`, i)) {
					t.Fatalf("call %d: %s %s", i, call.Status, call.Output)
				}
				if took > 2500*time.Millisecond {
					t.Errorf("call %d answered after %s: held by the proxy", i, took.Round(time.Millisecond))
				}
			}
			if n := count(p.finished(t), "", "/events"); n > 1 {
				t.Errorf("the client opened the held-back stream %d times; once is enough to learn: %q", n, p.finished(t))
			}
		})
	}
}

// togglingProxy forwards to the gateway, buffering the event stream and
// the probe while buffering is set (the stream held until the client goes,
// the probe handed over whole at its end), streaming them otherwise.
type togglingProxy struct {
	forward   *httputil.ReverseProxy
	gateway   string
	buffering atomic.Bool
	streams   atomic.Int32 // stream requests seen
	probes    atomic.Int32 // probe requests seen
}

func (p *togglingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/events"):
		p.streams.Add(1)
		if p.buffering.Load() {
			<-r.Context().Done() // held: nothing until the client gives up
			return
		}
	case strings.HasSuffix(r.URL.Path, "/probe"):
		p.probes.Add(1)
		if p.buffering.Load() {
			req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.gateway+r.URL.RequestURI(), nil)
			req.Header = r.Header.Clone()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body) // the whole reply, then at once
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			w.Write(body)
			return
		}
	}
	p.forward.ServeHTTP(w, r)
}

// TestClimbsBackToTheStreamWhenAProbePasses: a client moved to the
// long-poll by a proxy that holds the stream back probes the stream now
// and then without reopening it; while the proxy buffers, the probes fail
// and the client stays on the poll; once the proxy streams again, the next
// probe passes and the client goes back to the stream.
func TestClimbsBackToTheStreamWhenAProbePasses(t *testing.T) {
	g := gatewaytest.Start(t)
	target, _ := url.Parse(g.URL)
	toggling := &togglingProxy{forward: httputil.NewSingleHostReverseProxy(target), gateway: g.URL}
	toggling.forward.FlushInterval = -1
	toggling.buffering.Store(true)
	proxy := httptest.NewServer(toggling)
	t.Cleanup(proxy.Close)

	client, states := connectEcho(t, proxy.URL, func(c *mobile.Client) {
		c.SetReadyTimeoutMS(500)
		c.SetStreamRetryMS(300) // the first probe 300 ms after the move, then 600 ms, 1.2 s, ...
	}, "connected poll", 10*time.Second)
	testwait.Until(t, 10*time.Second, "two failed probes", func() bool { return toggling.probes.Load() >= 2 })
	if n := toggling.streams.Load(); n != 1 {
		t.Errorf("%d stream requests while the proxy buffers; the client should probe, not reopen the stream", n)
	}
	if tr := client.Transport(); tr != mobile.TransportPoll {
		t.Errorf("transport %q after failed probes, want poll", tr)
	}
	if states.has("connected sse") {
		t.Error("the held-back stream counted as connected")
	}
	if call := callTool(t, g, client.SessionID(), "echo", `{"via":"poll"}`); call.Status != toolgate.StatusCompleted {
		t.Fatalf("call on the poll: %s %s", call.Status, call.Output)
	}

	toggling.buffering.Store(false)
	states.waitFor(t, "connected sse", 15*time.Second)
	if call := callTool(t, g, client.SessionID(), "echo", `{"via":"stream"}`); call.Status != toolgate.StatusCompleted || !jsonEqual(call.Output, `{"via":"stream"}`) {
		t.Fatalf("call after the climb: %s %s", call.Status, call.Output)
	}
	var info struct {
		Transport   string `json:"transport"`
		HeartbeatMS int64  `json:"heartbeat_ms"`
		Probing     bool   `json:"probing"`
	}
	if err := json.Unmarshal([]byte(client.ConnectionInfo()), &info); err != nil || info.Transport != mobile.TransportSSE || info.Probing || info.HeartbeatMS <= 0 {
		t.Errorf("ConnectionInfo after the climb: %s (%v)", client.ConnectionInfo(), err)
	}
}

// cuttingBuffer forwards to the gateway, but holds each event stream's
// reply (headers included) for cut, then hands over what it got in one go
// and ends it: a buffering proxy that cuts before the client's ready
// timeout.
type cuttingBuffer struct {
	forward *httputil.ReverseProxy
	gateway string
	cut     time.Duration
	streams atomic.Int32
}

func (p *cuttingBuffer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/events") {
		p.forward.ServeHTTP(w, r)
		return
	}
	p.streams.Add(1)
	ctx, cancel := context.WithTimeout(r.Context(), p.cut)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, r.Method, p.gateway+r.URL.RequestURI(), nil)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body) // until the cut
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// TestReadyOnlyWithTheEndIsHeldBack: behind a proxy that hands over the
// stream (headers, ready, events) only when it cuts it, 1 s in, well before
// the ready timeout, the client does not take the burst for a live stream:
// it moves to the long-poll after the first such stream, and calls are
// answered at once there.
func TestReadyOnlyWithTheEndIsHeldBack(t *testing.T) {
	g := gatewaytest.Start(t)
	target, _ := url.Parse(g.URL)
	buffer := &cuttingBuffer{forward: httputil.NewSingleHostReverseProxy(target), gateway: g.URL, cut: time.Second}
	proxy := httptest.NewServer(buffer)
	t.Cleanup(proxy.Close)

	client, _ := connectEcho(t, proxy.URL, nil, "connected poll", 5*time.Second)
	time.Sleep(2 * buffer.cut) // a client that took the bursts for live streams would open more
	if n := buffer.streams.Load(); n != 1 {
		t.Errorf("%d stream requests; the first burst should have moved the client to the poll", n)
	}
	var info struct {
		LastCut *struct {
			AfterMS int64 `json:"after_ms"`
		} `json:"last_cut"`
	}
	if err := json.Unmarshal([]byte(client.ConnectionInfo()), &info); err != nil || info.LastCut == nil {
		t.Errorf("ConnectionInfo %s (%v): want the held-back stream as the last cut", client.ConnectionInfo(), err)
	}
	sent := time.Now()
	if call := callTool(t, g, client.SessionID(), "echo", `{"via":"poll"}`); call.Status != toolgate.StatusCompleted || !jsonEqual(call.Output, `{"via":"poll"}`) {
		t.Fatalf("call on the poll: %s %s", call.Status, call.Output)
	}
	if took := time.Since(sent); took > 2*time.Second {
		t.Errorf("call answered after %s on the poll", took.Round(time.Millisecond))
	}
}
