package mobile_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// idleCutProxy is a TCP proxy in front of a gateway that closes any
// connection on which no byte went either way for idle, as squid's
// read_timeout or a load balancer's idle timeout does. It notes when each
// event stream (a connection whose request is GET …/events) opened and
// was cut.
type idleCutProxy struct {
	t      *testing.T
	ln     net.Listener
	target string
	idle   time.Duration

	mu      sync.Mutex
	streams []streamSpan
}

// streamSpan is one event stream through the proxy.
type streamSpan struct {
	opened, cut time.Time // cut is zero while it lasts (or if it ended otherwise)
}

func startIdleCutProxy(t *testing.T, target string, idle time.Duration) *idleCutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &idleCutProxy{t: t, ln: ln, target: target, idle: idle}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *idleCutProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *idleCutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

// pipe copies both ways, noting the time of the last byte, and closes both
// ends once idle has passed without one.
func (p *idleCutProxy) pipe(down net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		down.Close()
		return
	}
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var stream atomic.Int32 // index+1 of the stream span, 0 if not a stream
	copyNoting := func(dst, src net.Conn, sniff bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				if sniff && stream.Load() == 0 && bytes.HasPrefix(buf[:n], []byte("GET ")) && bytes.Contains(bytes.SplitN(buf[:n], []byte("\r\n"), 2)[0], []byte("/events")) {
					p.mu.Lock()
					p.streams = append(p.streams, streamSpan{opened: time.Now()})
					stream.Store(int32(len(p.streams)))
					p.mu.Unlock()
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	done := make(chan struct{})
	go func() { copyNoting(up, down, true); close(done) }()
	go copyNoting(down, up, false)
	tick := time.NewTicker(p.idle / 20)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if time.Since(time.Unix(0, last.Load())) < p.idle {
				continue
			}
			if i := stream.Load(); i > 0 {
				p.mu.Lock()
				p.streams[i-1].cut = time.Now()
				p.mu.Unlock()
			}
			down.Close()
			up.Close()
			return
		}
	}
}

// spans returns the event streams so far.
func (p *idleCutProxy) spans() []streamSpan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]streamSpan(nil), p.streams...)
}

// connectionOf reads session sid's connection record from the gateway.
func connectionOf(t *testing.T, g *gatewaytest.Gateway, sid string) toolgate.Connection {
	t.Helper()
	var view toolgate.SessionView
	if status := agentRequest(t, g, http.MethodGet, "/v1/sessions/"+sid, nil, &view); status != http.StatusOK {
		t.Fatalf("GET /v1/sessions/%s: %d", sid, status)
	}
	return view.Connection
}

// echoClient connects a client with the echo tool to url over the stream.
func echoClient(t *testing.T, url string) (*mobile.Client, *stateRecorder) {
	t.Helper()
	return connectEcho(t, url, func(c *mobile.Client) { setTransport(t, c, mobile.TransportSSE) }, "connected sse", 10*time.Second)
}

// Behind a proxy that cuts idle connections at 1.5 s, a gateway pinging
// every 6 s loses the stream every 1.5 s. After two such cuts the client
// asks a heartbeat of 1 s (0.4 × 1.5 s, at least 1 s) on its next stream,
// and the cuts stop: the gateway's record of the session shows the
// heartbeat asked and no new cut for several idle limits.
func TestIdleCutsTeachTheHeartbeatAndStop(t *testing.T) {
	g := gatewaytest.Start(t, "--heartbeat", "6s", "--log-level", "warn")
	proxy := startIdleCutProxy(t, g.Addr(), 1500*time.Millisecond)
	client, _ := echoClient(t, proxy.URL())
	sid := client.SessionID()
	testwait.Until(t, 20*time.Second, "the stream asking a 1 s heartbeat", func() bool {
		c := connectionOf(t, g, sid)
		return c.HeartbeatMS != nil && *c.HeartbeatMS == 1000
	})
	before := connectionOf(t, g, sid)
	if before.Cuts < 2 || before.Cuts > 4 || before.LastCut == nil || before.LastCut.AfterMS < 1000 {
		t.Fatalf("before the heartbeat was learned: %+v (last cut %+v), want 2 to 4 cuts at about 1.5 s", before, before.LastCut)
	}
	time.Sleep(6 * time.Second) // four idle limits
	after := connectionOf(t, g, sid)
	if after.Cuts != before.Cuts || after.State != toolgate.PresenceConnected || after.Transport == nil || *after.Transport != "stream" {
		t.Fatalf("with a 1 s heartbeat behind a 1.5 s idle limit: %+v, want no new cut since %d", after, before.Cuts)
	}
	spans := proxy.spans()
	if last := spans[len(spans)-1]; !last.cut.IsZero() {
		t.Fatalf("the last stream through the proxy was cut: %+v", spans)
	}
	start := time.Now()
	if call := callTool(t, g, sid, "echo", `{"n":1}`); call.Status != toolgate.StatusCompleted || time.Since(start) > 2*time.Second {
		t.Fatalf("a call after the heartbeat was learned: %+v in %s", call, time.Since(start))
	}
}

// Behind a proxy that cuts idle connections at 700 ms — sooner than any
// heartbeat the gateway grants (--min-heartbeat 1 s) — the stream is cut
// over and over. Each cut stream is opened again at once: the gaps without
// a stream stay small and do not grow with the cuts (the shared browser
// lane's grew 0.3 → 25.7 s), and calls made meanwhile are all answered.
func TestRepeatedIdleCutsKeepTheGapsShort(t *testing.T) {
	g := gatewaytest.Start(t, "--heartbeat", "6s", "--log-level", "warn")
	proxy := startIdleCutProxy(t, g.Addr(), 700*time.Millisecond)
	client, _ := echoClient(t, proxy.URL())
	sid := client.SessionID()
	// Idle: a cut every 700 ms or so. (A call's events keep a
	// connection busy, so the calls come after.)
	time.Sleep(8 * time.Second)
	var took []time.Duration
	for i := range 4 {
		start := time.Now()
		call := callTool(t, g, sid, "echo", `{}`)
		if call.Status != toolgate.StatusCompleted {
			t.Fatalf("call %d: %+v", i, call)
		}
		took = append(took, time.Since(start).Round(time.Millisecond))
		time.Sleep(1200 * time.Millisecond) // past the idle limit: a cut between calls
	}
	spans := proxy.spans()
	var gaps []time.Duration
	for i := 1; i < len(spans); i++ {
		if !spans[i-1].cut.IsZero() {
			gaps = append(gaps, spans[i].opened.Sub(spans[i-1].cut).Round(time.Millisecond))
		}
	}
	t.Logf("calls answered in %v; %d streams, gaps after each cut %v", took, len(spans), gaps)
	if len(gaps) < 8 {
		t.Fatalf("only %d cuts in the run: the proxy did not cut as meant (%+v)", len(gaps), spans)
	}
	for i, gap := range gaps {
		// The policy's wait is at most 250 ms; the rest is connecting on
		// a loaded machine. A backoff that grew would reach seconds.
		if gap > 1500*time.Millisecond {
			t.Fatalf("gap %d after a cut was %s (all: %v)", i+1, gap, gaps)
		}
	}
	for i, d := range took {
		if d > 3*time.Second {
			t.Fatalf("call %d took %s (all: %v)", i, d, took)
		}
	}
}

// A 503 with Retry-After on the stream's opening is waited before the
// next attempt, however short the policy's own wait.
func TestStreamObeysRetryAfter(t *testing.T) {
	g := gatewaytest.Start(t, "--log-level", "warn")
	target, _ := url.Parse(g.URL)
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.FlushInterval = -1
	var mu sync.Mutex
	var opens []time.Time
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			mu.Lock()
			opens = append(opens, time.Now())
			first := len(opens) == 1
			mu.Unlock()
			if first {
				w.Header().Set("Retry-After", "2")
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, "<html>busy</html>")
				return
			}
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	client, _ := echoClient(t, proxy.URL)
	mu.Lock()
	waited := opens[1].Sub(opens[0])
	mu.Unlock()
	if waited < 1900*time.Millisecond || waited > 6*time.Second {
		t.Fatalf("the stream was opened again %s after a 503 with Retry-After: 2", waited)
	}
	if call := callTool(t, g, client.SessionID(), "echo", `{}`); call.Status != toolgate.StatusCompleted {
		t.Fatalf("call: %+v", call)
	}
}
