package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/devcert"
	"github.com/toolgate/toolgate/server"
)

// tlsGateway is a real gateway serving HTTPS with a certificate the test
// made, and a client that trusts that certificate and counts the
// connections it dials.
type tlsGateway struct {
	t      *testing.T
	URL    string
	client *http.Client
	dials  *atomic.Int64
	stop   func()
}

// startTLSGateway serves a gateway over TLS on a free loopback port. With
// http1Only the client offers only HTTP/1.1 in its handshake (as curl
// --http1.1 or an old proxy does); otherwise it negotiates HTTP/2.
func startTLSGateway(t *testing.T, http1Only bool) *tlsGateway {
	t.Helper()
	certs, err := devcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.ConfigForTest(t)
	cfg.TLSCert, cfg.TLSKey = certs.CertFile, certs.KeyFile
	srv, stop := server.StartForTest(t, cfg)
	dials := &atomic.Int64{}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: certs.Roots},
		ForceAttemptHTTP2: !http1Only,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}
	if http1Only {
		transport.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(transport.CloseIdleConnections)
	return &tlsGateway{t: t, URL: srv.URL(), client: &http.Client{Transport: transport}, dials: dials, stop: stop}
}

// do sends a JSON request and returns the response's protocol major
// version, status and body.
func (g *tlsGateway) do(method, path, secret string, body any) (proto, status int, data []byte) {
	g.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, g.URL+path, r)
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ = io.ReadAll(resp.Body)
	return resp.ProtoMajor, resp.StatusCode, data
}

// call is do with the status checked and the reply decoded into out.
func (g *tlsGateway) call(method, path, secret string, body any, wantStatus, wantProto int, out any) {
	g.t.Helper()
	proto, status, data := g.do(method, path, secret, body)
	if status != wantStatus || proto != wantProto {
		g.t.Fatalf("%s %s: HTTP/%d %d, want HTTP/%d %d: %s", method, path, proto, status, wantProto, wantStatus, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			g.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// sessionWithEcho creates a session offering the echo tool.
func (g *tlsGateway) sessionWithEcho(proto int) session {
	g.t.Helper()
	var s session
	g.call("POST", "/v1/sessions", "", map[string]any{"client": map[string]any{"name": "tls", "platform": "desktop"}}, 201, proto, &s)
	g.call("POST", "/v1/sessions/"+s.ID+"/tools", s.Token, map[string]any{"type": "register_tools", "tools": []any{echoTool}}, 200, proto, nil)
	return s
}

// tlsStream is an open event stream whose call requests are read into a
// channel.
type tlsStream struct {
	proto int
	calls chan string // ids of tool_call_request events
	ended chan struct{}
}

// openStream opens a session's event stream and waits for its ready event.
func (g *tlsGateway) openStream(ctx context.Context, s session) *tlsStream {
	g.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", g.URL+"/v1/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := g.client.Do(req)
	if err != nil {
		g.t.Fatalf("stream of %s: %v", s.ID, err)
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		g.t.Fatalf("stream of %s: status %d", s.ID, resp.StatusCode)
	}
	st := &tlsStream{proto: resp.ProtoMajor, calls: make(chan string, 16), ended: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(st.ended)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "event: ready":
				close(ready)
			case strings.HasPrefix(line, "event: "):
				event = line[7:]
			case strings.HasPrefix(line, "data: ") && event == "tool_call_request":
				var ev struct {
					ID string `json:"id"`
				}
				json.Unmarshal([]byte(line[6:]), &ev)
				st.calls <- ev.ID
			}
		}
	}()
	select {
	case <-ready:
	case <-st.ended:
		g.t.Fatalf("stream of %s ended before ready", s.ID)
	case <-time.After(10 * time.Second):
		g.t.Fatalf("stream of %s: no ready within 10s", s.ID)
	}
	return st
}

// callAndAnswer starts a call of echo on s, takes its request from the
// stream, answers it and checks that the call completed with the answer.
func (g *tlsGateway) callAndAnswer(s session, st *tlsStream, text string, proto int) {
	g.t.Helper()
	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": text}, "wait": false}, 202, proto, &rec)
	select {
	case id := <-st.calls:
		if id != rec.ID {
			g.t.Fatalf("stream of %s carried call %s, want %s", s.ID, id, rec.ID)
		}
	case <-time.After(10 * time.Second):
		g.t.Fatalf("call %s not on the stream of %s within 10s", rec.ID, s.ID)
	}
	g.call("POST", "/v1/sessions/"+s.ID+"/results", s.Token, map[string]any{"type": "tool_result", "id": rec.ID, "success": true, "output": text}, 200, proto, nil)
	var done callRecord
	g.call("GET", "/v1/calls/"+rec.ID+"?wait_ms=10000", testAgentKey, nil, 200, proto, &done)
	if want, _ := json.Marshal(text); done.Status != "completed" || !bytes.Equal(done.Output, want) {
		g.t.Fatalf("call %s = %s %s, want completed %s", rec.ID, done.Status, done.Output, want)
	}
}

// TestTLSServesHTTP2: with a certificate and key the gateway serves HTTPS
// (URL says https), a client that offers HTTP/2 gets it, and a session
// registers, receives a call on its event stream and answers it, every
// request over HTTP/2.
func TestTLSServesHTTP2(t *testing.T) {
	g := startTLSGateway(t, false)
	if !strings.HasPrefix(g.URL, "https://127.0.0.1:") {
		t.Fatalf("URL = %q, want https://127.0.0.1:PORT", g.URL)
	}
	s := g.sessionWithEcho(2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := g.openStream(ctx, s)
	if st.proto != 2 {
		t.Fatalf("stream over HTTP/%d, want 2", st.proto)
	}
	g.callAndAnswer(s, st, "over h2", 2)

	// Plain HTTP to the TLS port is refused, not served in the clear.
	resp, err := http.Get(strings.Replace(g.URL, "https://", "http://", 1) + "/healthz")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d %s", resp.StatusCode, body)
		}
	}
}

// TestTLSManyStreamsOnOneHTTP2Connection: 20 sessions' event streams (as
// 20 tabs of one browser) and all their calls, answers and the caller's
// requests share ONE HTTP/2 connection, and every session answers its own
// call.
func TestTLSManyStreamsOnOneHTTP2Connection(t *testing.T) {
	const tabs = 20
	g := startTLSGateway(t, false)
	sessions := make([]session, tabs)
	for i := range sessions {
		sessions[i] = g.sessionWithEcho(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := make([]*tlsStream, tabs)
	for i, s := range sessions {
		if streams[i] = g.openStream(ctx, s); streams[i].proto != 2 {
			t.Fatalf("stream %d over HTTP/%d", i, streams[i].proto)
		}
	}
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.callAndAnswer(sessions[i], streams[i], fmt.Sprintf("tab %d", i), 2)
		}()
	}
	wg.Wait()
	if n := g.dials.Load(); n != 1 {
		t.Errorf("the client dialled %d connections for %d streams and their calls, want 1", n, tabs)
	}

	// Shutting down ends the HTTP/2 streams at once (their clients
	// reconnect to the next process) rather than waiting out the
	// shutdown timeout.
	start := time.Now()
	g.stop()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown with %d HTTP/2 streams open took %s", tabs, took)
	}
	for i, st := range streams {
		select {
		case <-st.ended:
		case <-time.After(5 * time.Second):
			t.Fatalf("stream %d still open after shutdown", i)
		}
	}
}

// TestTLSServesHTTP1: a client that offers only HTTP/1.1 in its handshake
// gets HTTP/1.1 over TLS, and its stream (taken over by the stream hub,
// over the TLS connection) carries its call.
func TestTLSServesHTTP1(t *testing.T) {
	g := startTLSGateway(t, true)
	s := g.sessionWithEcho(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := g.openStream(ctx, s)
	if st.proto != 1 {
		t.Fatalf("stream over HTTP/%d, want 1", st.proto)
	}
	g.callAndAnswer(s, st, "over TLS, HTTP/1.1", 1)
}

// TestTLSSettingsRefused: a certificate without its key, a key without its
// certificate, a missing file and a key of another certificate stop Open
// with an error naming the problem, before the database is opened (and so
// before any address is bound).
func TestTLSSettingsRefused(t *testing.T) {
	one, err := devcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := devcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"cert without key", one.CertFile, "", "set without a tls key"},
		{"key without cert", "", one.KeyFile, "set without a tls cert"},
		{"missing cert file", missing, one.KeyFile, "no such file"},
		{"missing key file", one.CertFile, missing, "no such file"},
		{"key of another certificate", one.CertFile, other.KeyFile, "private key does not match public key"},
		{"key file given as the cert", one.KeyFile, one.KeyFile, "tls cert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.ConfigForTest(t)
			cfg.TLSCert, cfg.TLSKey = tc.cert, tc.key
			if tc.key == "" || tc.cert == "" {
				if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Validate() = %v, want an error with %q", err, tc.want)
				}
			}
			srv, err := server.Open(context.Background(), cfg, nil)
			if err == nil {
				srv.Close()
				t.Fatalf("Open took cert %q key %q", tc.cert, tc.key)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v, want an error with %q", err, tc.want)
			}
			if _, err := os.Stat(cfg.DBPath); !os.IsNotExist(err) {
				t.Errorf("the database was opened before the TLS settings were checked (stat: %v)", err)
			}
		})
	}
}
