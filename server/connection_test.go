package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/server"
)

// The keep-alive a client asks (heartbeat_ms), the stream probe, the
// poll's hold in the multi-session poll's reply, and each session's
// connection record and presence, against a real gateway over HTTP.

// connectionView is GET /v1/sessions/{sid}'s "connection".
type connectionView struct {
	State       string  `json:"state"`
	Transport   *string `json:"transport"`
	HeartbeatMS *int64  `json:"heartbeat_ms"`
	ConnectedAt *string `json:"connected_at"`
	Cuts        int64   `json:"cuts"`
	LastCut     *struct {
		At      string `json:"at"`
		AfterMS int64  `json:"after_ms"`
	} `json:"last_cut"`
}

func (g *gateway) connection(s session) connectionView {
	g.t.Helper()
	var v struct {
		Connection connectionView `json:"connection"`
	}
	g.call("GET", "/v1/sessions/"+s.ID, testAgentKey, nil, 200, &v)
	return v.Connection
}

// openStreamAsking opens session s's stream with ?heartbeat_ms=asked.
func (g *gateway) openStreamAsking(s session, asked string) *stream {
	g.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", g.URL+"/v1/sessions/"+s.ID+"/events?heartbeat_ms="+url.QueryEscape(asked), nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	return g.readStream(req, cancel)
}

// openMultiAsking opens a multi-session stream whose body's heartbeat_ms
// is the JSON text asked.
func (g *gateway) openMultiAsking(asked string, entries ...map[string]any) (*stream, sseEvent) {
	g.t.Helper()
	list, _ := json.Marshal(entries)
	body := `{"sessions":` + string(list) + `,"heartbeat_ms":` + asked + `}`
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/v1/streams", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	st := g.readStream(req, cancel)
	return st, st.next()
}

// pingsWithin counts the pings the stream receives within d.
func (s *stream) pingsWithin(d time.Duration) int {
	n := 0
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return n
			}
			if ev.Event == "ping" {
				n++
			}
		case <-timeout:
			return n
		}
	}
}

func heartbeatGateway(t *testing.T) *gateway {
	return startGateway(t, func(c *server.Config) {
		c.Heartbeat = 10 * time.Second
		c.MinHeartbeat = 300 * time.Millisecond
	})
}

func TestHeartbeatAskedIsRefusedWhenNotAWholeNumber(t *testing.T) {
	g := heartbeatGateway(t)
	s := g.newSession("tab")
	for _, bad := range []string{"abc", "-5", "1.5", "", "1e3", " 500", "0x10"} {
		status, body := g.do("GET", "/v1/sessions/"+s.ID+"/events?heartbeat_ms="+url.QueryEscape(bad), s.Token, nil)
		if status != 400 || errorCode(body) != "BAD_REQUEST" || !strings.Contains(string(body), "heartbeat_ms") {
			t.Errorf("stream heartbeat_ms=%q: %d %s", bad, status, body)
		}
		entries, _ := json.Marshal([]map[string]any{entry(s, -1)})
		js, _ := json.Marshal(bad)
		for _, asked := range []string{string(js), "-5", "1.5", "1e3", "true", "{}"} {
			status, body = g.do("POST", "/v1/streams", "", `{"sessions":`+string(entries)+`,"heartbeat_ms":`+asked+`}`)
			if status != 400 || errorCode(body) != "BAD_REQUEST" {
				t.Errorf("multi-session stream heartbeat_ms %s: %d %s", asked, status, body)
			}
		}
	}
	// Nothing was opened by the refusals.
	if c := g.connection(s); c.Transport != nil || c.Cuts != 0 {
		t.Fatalf("after refused opens the connection is %+v", c)
	}
}

func TestHeartbeatAskedIsClampedAndEchoedInReady(t *testing.T) {
	g := heartbeatGateway(t)
	s := g.newSession("tab")
	for asked, want := range map[string]float64{
		"1": 300, "0": 300, "450": 450, "10000": 10000, "60000": 10000,
		"99999999999999999999999999999": 10000, // beyond an int64: the most
	} {
		st := g.openStreamAsking(s, asked)
		if ready := st.nextOfType("ready"); ready.Data["heartbeat_ms"] != want {
			t.Errorf("heartbeat_ms=%s: ready %s, want %v", asked, ready.Raw, want)
		}
		st.Close()
	}
	for asked, want := range map[string]float64{
		"null": 10000, "5": 300, "2500": 2500, "123456789012345678901234567890": 10000,
	} {
		st, ready := g.openMultiAsking(asked, entry(s, -1))
		if ready.Data["heartbeat_ms"] != want {
			t.Errorf("multi heartbeat_ms %s: ready %s, want %v", asked, ready.Raw, want)
		}
		st.Close()
	}
}

// Each stream pings on its own interval: a stream that asked 300 ms gets
// several pings while one on the default 10 s gets none, on the same
// gateway at the same time.
func TestEachStreamPingsOnItsOwnInterval(t *testing.T) {
	g := heartbeatGateway(t)
	a, b, c := g.newSession("fast"), g.newSession("slow"), g.newSession("fast tabs")
	fast := g.openStreamAsking(a, "300")
	fast.nextOfType("ready")
	slow := g.openStream(b, "")
	slow.nextOfType("ready")
	multi, _ := g.openMultiAsking("300", entry(c, -1))
	var wg sync.WaitGroup
	var nFast, nSlow, nMulti int
	wg.Add(3)
	go func() { defer wg.Done(); nFast = fast.pingsWithin(2 * time.Second) }()
	go func() { defer wg.Done(); nSlow = slow.pingsWithin(2 * time.Second) }()
	go func() { defer wg.Done(); nMulti = multi.pingsWithin(2 * time.Second) }()
	wg.Wait()
	// 300 ms over 2 s is 6 pings; generous bounds for a loaded machine.
	if nFast < 3 || nMulti < 3 || nSlow != 0 {
		t.Fatalf("pings in 2 s: stream asking 300 ms %d, multi-session stream asking 300 ms %d, stream on the default 10 s %d",
			nFast, nMulti, nSlow)
	}
}

func TestConnectionRecordFollowsStreamsPollsAndCuts(t *testing.T) {
	g := startGateway(t, func(c *server.Config) {
		c.Heartbeat = 10 * time.Second
		c.MinHeartbeat = 300 * time.Millisecond
		c.SessionGrace = time.Minute
	})
	s := g.newSession("tab")
	g.register(s, echoTool)
	if c := g.connection(s); c.State != "away" || c.Transport != nil || c.Cuts != 0 || c.LastCut != nil {
		t.Fatalf("a new session's connection is %+v, want away without transport", c)
	}
	st := g.openStreamAsking(s, "2000")
	st.nextOfType("ready")
	c := g.connection(s)
	if c.State != "connected" || c.Transport == nil || *c.Transport != "stream" || c.HeartbeatMS == nil || *c.HeartbeatMS != 2000 || c.ConnectedAt == nil {
		t.Fatalf("with a stream open the connection is %+v", c)
	}
	if tool := g.apiTools()["echo"]; tool.Presence != "connected" || !tool.Online {
		t.Fatalf("echo listed %+v while its stream is open", tool)
	}
	if tool := g.apiTools()["current_time"]; tool.Presence != "connected" {
		t.Fatalf("a built-in tool listed %+v", tool)
	}
	time.Sleep(300 * time.Millisecond) // an age worth measuring
	st.Close()                         // the client's connection breaks: a cut
	testwait.Until(t, 5*time.Second, "the cut recorded", func() bool { return g.connection(s).Cuts == 1 })
	c = g.connection(s)
	if c.State != "away" || c.Transport != nil || c.HeartbeatMS != nil || c.LastCut == nil || c.LastCut.AfterMS < 300 || c.LastCut.AfterMS > 10_000 {
		t.Fatalf("after the cut the connection is %+v (last cut %+v)", c, c.LastCut)
	}
	if tool := g.apiTools()["echo"]; tool.Presence != "away" || !tool.Online {
		t.Fatalf("echo listed %+v after its stream was cut, within the grace", tool)
	}

	// A poll answered by the gateway is no cut; the session shows polling.
	g.call("GET", "/v1/sessions/"+s.ID+"/poll?wait_ms=0", s.Token, nil, 200, nil)
	if c := g.connection(s); c.State != "connected" || c.Transport == nil || *c.Transport != "poll" || c.HeartbeatMS != nil || c.Cuts != 1 {
		t.Fatalf("after a poll the connection is %+v", c)
	}

	// A session that leaves a multi-session stream is not cut.
	multi, ready := g.openMultiAsking("700", entry(s, -1))
	c = g.connection(s)
	if c.Transport == nil || *c.Transport != "multi_stream" || c.HeartbeatMS == nil || *c.HeartbeatMS != 700 {
		t.Fatalf("on a multi-session stream the connection is %+v", c)
	}
	g.call("DELETE", "/v1/streams/"+ready.Data["stream_id"].(string)+"/sessions/"+s.ID, s.Token, nil, 204, nil)
	multi.nextOfType("session_left")
	multi.Close()
	time.Sleep(200 * time.Millisecond) // the stream's end, if it were counted
	if c := g.connection(s); c.Cuts != 1 {
		t.Fatalf("a leave was counted as a cut: %+v", c)
	}

	// A held poll whose client goes away (a proxy's 504) is a cut.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", g.URL+"/v1/sessions/"+s.ID+"/poll?wait_ms=20000", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	go func() {
		testwait.Until(t, 5*time.Second, "the poll held", func() bool {
			c := g.connection(s)
			return c.Transport != nil && *c.Transport == "poll"
		})
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	testwait.Until(t, 5*time.Second, "the poll's cut recorded", func() bool { return g.connection(s).Cuts == 2 })

	// The session list shows the same record.
	var list struct {
		Sessions []struct {
			ID         string         `json:"session_id"`
			Connection connectionView `json:"connection"`
		} `json:"sessions"`
	}
	g.call("GET", "/v1/sessions", testAgentKey, nil, 200, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Connection.Cuts != 2 || list.Sessions[0].Connection.State != "connected" {
		t.Fatalf("GET /v1/sessions: %+v", list)
	}
}

// A tool whose client left is away within its grace and offline after it.
func TestToolPresenceGoesOfflineAfterTheGrace(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.SessionGrace = 400 * time.Millisecond })
	s := g.newSession("tab")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	st.nextOfType("ready")
	st.Close()
	testwait.Until(t, 5*time.Second, "echo offline", func() bool {
		tool := g.apiTools()["echo"]
		return tool.Presence == "offline" && !tool.Online
	})
	if c := g.connection(s); c.State != "offline" || c.Cuts != 1 {
		t.Fatalf("the connection past the grace is %+v", c)
	}
}

func TestMultiPollReplyCarriesThePollWait(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.PollWait = 7 * time.Second })
	s := g.newSession("tab")
	status, body := g.do("POST", "/v1/poll", "", map[string]any{"sessions": []any{entry(s, -1)}, "wait_ms": 0})
	var reply struct {
		PollWaitMS *int64 `json:"poll_wait_ms"`
	}
	if status != 200 || json.Unmarshal(body, &reply) != nil || reply.PollWaitMS == nil || *reply.PollWaitMS != 7000 {
		t.Fatalf("POST /v1/poll: %d %s", status, body)
	}
}

// probeEvent is one event of a probe and when it arrived.
type probeEvent struct {
	raw string
	at  time.Time
}

// probe runs GET /v1/sessions/{sid}/probe with token and returns the reply
// and its events as they arrived.
func (g *gateway) probe(sid, token string) (*http.Response, []probeEvent) {
	g.t.Helper()
	req, _ := http.NewRequest("GET", g.URL+"/v1/sessions/"+sid+"/probe", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	var events []probeEvent
	buf := make([]byte, 4096)
	var pending []byte
	for {
		n, err := resp.Body.Read(buf)
		pending = append(pending, buf[:n]...)
		for {
			i := bytes.Index(pending, []byte("\n\n"))
			if i < 0 {
				break
			}
			events = append(events, probeEvent{raw: string(pending[:i]), at: time.Now()})
			pending = pending[i+2:]
		}
		if err != nil {
			return resp, events
		}
	}
}

func TestProbeStreamsTwoStepsApartAndEnds(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("polling tab")
	before := g.connection(s)
	start := time.Now()
	resp, events := g.probe(s.ID, s.Token)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" ||
		resp.Header.Get("X-Accel-Buffering") != "no" || resp.Header.Get("Cache-Control") != "no-cache, no-transform" {
		t.Fatalf("probe: %d %v", resp.StatusCode, resp.Header)
	}
	if len(events) != 2 || events[0].raw != "event: ready\ndata: {\"type\":\"probe\",\"step\":1}" ||
		events[1].raw != "event: probe\ndata: {\"type\":\"probe\",\"step\":2}" {
		t.Fatalf("probe events %+v", events)
	}
	if gap := events[1].at.Sub(events[0].at); gap < 400*time.Millisecond || time.Since(start) > 10*time.Second {
		t.Fatalf("step 2 came %s after step 1, want about 500 ms", gap)
	}
	// The probe is no connection.
	if after := g.connection(s); after.State != before.State || after.Transport != nil || after.Cuts != 0 {
		t.Fatalf("the probe changed the connection: %+v -> %+v", before, after)
	}
}

func TestProbeRefusesWrongTokenAndASecondAtOnce(t *testing.T) {
	g := startGateway(t, nil)
	s, other := g.newSession("tab"), g.newSession("other")
	for _, token := range []string{"", "tgs_wrong", testAgentKey} {
		status, body := g.do("GET", "/v1/sessions/"+s.ID+"/probe", token, nil)
		if status != 401 || errorCode(body) != "UNAUTHENTICATED" {
			t.Errorf("probe with token %q: %d %s", token, status, body)
		}
	}
	if status, body := g.do("GET", "/v1/sessions/"+s.ID+"/probe", other.Token, nil); status != 403 {
		t.Errorf("probe with another session's token: %d %s", status, body)
	}
	// The second while the first is held (it lasts 500 ms): the first's
	// step 1 has arrived.
	req, _ := http.NewRequest("GET", g.URL+"/v1/sessions/"+s.ID+"/probe", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	first, err := http.DefaultClient.Do(req)
	if err != nil || first.StatusCode != 200 {
		t.Fatalf("first probe: %v %v", first, err)
	}
	defer first.Body.Close()
	step1 := make([]byte, len("event: ready\n"))
	if _, err := io.ReadFull(first.Body, step1); err != nil {
		t.Fatal(err)
	}
	status, body := g.do("GET", "/v1/sessions/"+s.ID+"/probe", s.Token, nil)
	if status != 409 || errorCode(body) != "CONFLICT" {
		t.Fatalf("second probe at once: %d %s", status, body)
	}
	if rest, err := io.ReadAll(first.Body); err != nil || !strings.HasSuffix(string(rest), "\"step\":2}\n\n") {
		t.Fatalf("the first probe went on with %q, %v", rest, err)
	}
	// Once the first ended, the session may probe again; another session
	// could all along.
	if resp, events := g.probe(s.ID, s.Token); resp.StatusCode != 200 || len(events) != 2 {
		t.Fatalf("probe after the first ended: %d %v", resp.StatusCode, events)
	}
	if resp, events := g.probe(other.ID, other.Token); resp.StatusCode != 200 || len(events) != 2 {
		t.Fatalf("another session's probe: %d %v", resp.StatusCode, events)
	}
}
