package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/toolgate/toolgate/internal/devcert"
)

// The ways the idle holder reaches a toolgate gateway, each its own
// figure: the gateway's memory per idle session held that way.
const (
	idleH1      = "h1"       // one raw HTTP/1.1 stream per session, a TCP connection each
	idleH1TLS   = "h1-tls"   // the same over TLS: HTTPS without HTTP/2
	idleH2      = "h2"       // one stream per session, multiplexed over HTTP/2 connections
	idleMulti   = "multi"    // multi-session streams (POST /v1/streams) over plain HTTP/1.1
	idleMultiH2 = "multi-h2" // multi-session streams multiplexed over HTTP/2 connections
)

// idleTransports are the ways the harness measures, in order.
var idleTransports = []string{idleH1, idleH1TLS, idleH2, idleMulti, idleMultiH2}

// tabsPerBrowser is how many sessions one multi-session stream carries in
// the idle figures: 20 tabs of one browser, each tab's session on the
// stream its leader tab holds.
const tabsPerBrowser = 20

// idleMetric names the figure of a way of holding idle sessions.
func idleMetric(transport string) string {
	if transport == idleH1 {
		return "idle_session_bytes"
	}
	return "idle_session_bytes_" + strings.ReplaceAll(transport, "-", "_")
}

// idleOverTLS reports whether the gateway serves HTTPS for transport.
func idleOverTLS(transport string) bool { return transport != idleH1 && transport != idleMulti }

// runIdle is the "idle" subcommand: it opens n idle sessions on the
// gateway and holds them until its standard input closes. For toolgate
// each is a session with the echo tool and its event stream, held as
// --transport says; for the baseline each is a WebSocket that registered
// the echo tool. It prints "READY <n>" once every stream has said ready.
func runIdle(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("toolgate-bench idle", flag.ContinueOnError)
	system := fs.String("system", sysSSE, "toolgate_sse or websocket_baseline")
	url := fs.String("url", "", "gateway base URL")
	n := fs.Int("n", 1, "idle sessions to hold")
	transport := fs.String("transport", idleH1, "toolgate_sse only: h1, h1-tls, h2, multi or multi-h2")
	perStream := fs.Int("per-stream", tabsPerBrowser, "sessions on one multi-session stream")
	caFile := fs.String("ca", "", "PEM file of the authority that signed an https gateway's certificate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *url == "" {
		return errors.New("--url and --n >= 1 are required")
	}
	var roots *x509.CertPool
	if *caFile != "" {
		var err error
		if roots, err = devcert.LoadRoots(*caFile); err != nil {
			return err
		}
	}
	var held *idleSet
	var err error
	switch {
	case *system == sysBaseline:
		held, err = holdWebSockets(ctx, *url, *n)
	case *system != sysSSE:
		return fmt.Errorf("--system %q has no idle sessions", *system)
	case *transport == idleH1 || *transport == idleH1TLS:
		held, err = holdRawStreams(ctx, *url, roots, *n)
	case *transport == idleH2:
		held, err = holdHTTP2Streams(ctx, *url, roots, *n)
	case (*transport == idleMulti || *transport == idleMultiH2) && *perStream >= 1:
		held, err = holdMultiStreams(ctx, *url, roots, *n, *perStream)
	default:
		return fmt.Errorf("--transport %q (--per-stream %d): h1, h1-tls, h2, multi or multi-h2, at least one session per stream", *transport, *perStream)
	}
	defer held.close()
	if err != nil {
		return err
	}
	fmt.Printf("READY %d\n", held.count())
	if held.conns != nil {
		fmt.Fprintf(os.Stderr, "%d sessions held over %d connections\n", held.count(), held.conns.Load())
	}
	waitStdinClosed(ctx)
	return nil
}

// idleSet is what a holder holds: a closer per session or stream (or
// one for all, with the count of streams), and the connections dialled
// when they are counted.
type idleSet struct {
	mu      sync.Mutex
	closers []func()
	streams int // streams held under one closer
	conns   *atomic.Int64
}

func (s *idleSet) add(close func()) {
	s.mu.Lock()
	s.closers = append(s.closers, close)
	s.mu.Unlock()
}

// count is how many sessions are held.
func (s *idleSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams > 0 {
		return s.streams
	}
	return len(s.closers)
}

// close closes everything held; a nil set holds nothing.
func (s *idleSet) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.closers {
		c()
	}
}

// holdWebSockets connects n baseline clients.
func holdWebSockets(ctx context.Context, url string, n int) (*idleSet, error) {
	held := &idleSet{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for range n {
		g.Go(func() error {
			_, closer, err := connectWS(gctx, url)
			if err == nil {
				held.add(closer)
			}
			return err
		})
	}
	return held, g.Wait()
}

// holdRawStreams creates n sessions and opens one raw HTTP/1.1 stream for
// each, a connection of its own (over TLS for an https url).
func holdRawStreams(ctx context.Context, url string, roots *x509.CertPool, n int) (*idleSet, error) {
	client := newAPIClient(32)
	if roots != nil {
		client = newTLSAPIClient(32, roots)
	}
	defer client.CloseIdleConnections()
	sessions, err := createSessions(ctx, client, url, n)
	if err != nil {
		return nil, err
	}
	held := &idleSet{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, s := range sessions {
		g.Go(func() error {
			st, err := openStream(gctx, url, roots, s, 0)
			if err != nil {
				return err
			}
			if err := st.waitReady(30 * time.Second); err != nil {
				st.close()
				return err
			}
			// Keep reading (pings), as a live client does.
			go func() {
				for {
					if _, err := st.next(); err != nil {
						return
					}
				}
			}()
			held.add(st.close)
			return nil
		})
	}
	return held, g.Wait()
}

// holdHTTP2Streams creates n sessions and opens each one's stream through
// one HTTP/2 client, as the tabs of one browser would: the streams share
// a connection until it carries as many as the gateway allows at once
// (net/http's default is 250), then the client dials another. The
// sessions are created over the same client first.
func holdHTTP2Streams(ctx context.Context, url string, roots *x509.CertPool, n int) (*idleSet, error) {
	if !strings.HasPrefix(url, "https://") {
		return nil, errors.New("h2 needs an https gateway")
	}
	held := &idleSet{conns: &atomic.Int64{}}
	client := streamClient(url, roots, held.conns)
	transport := client.Transport.(*http.Transport)
	sessions, err := createSessions(ctx, client, url, n)
	if err != nil {
		return held, err
	}
	streamCtx, cancel := context.WithCancel(context.Background())
	held.add(func() { cancel(); transport.CloseIdleConnections() })
	var opened atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, s := range sessions {
		g.Go(func() error {
			req, _ := http.NewRequestWithContext(streamCtx, "GET", url+"/v1/sessions/"+s.ID+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+s.Token)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
				resp.Body.Close()
				return fmt.Errorf("GET events: HTTP/%d %d, want HTTP/2 200", resp.ProtoMajor, resp.StatusCode)
			}
			rd := bufio.NewReaderSize(resp.Body, 4096)
			if err := readUntilReady(gctx, rd, resp.Body); err != nil {
				resp.Body.Close()
				return err
			}
			opened.Add(1)
			keepReading(resp.Body, rd)
			return nil
		})
	}
	err = g.Wait()
	held.streams = int(opened.Load())
	return held, err
}

// readUntilReady reads an event stream until its ready event, within 30
// seconds (body is closed when they pass).
func readUntilReady(ctx context.Context, rd *bufio.Reader, body io.Closer) error {
	timer := time.AfterFunc(30*time.Second, func() { body.Close() })
	defer timer.Stop()
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return fmt.Errorf("stream ended before ready: %w", err)
		}
		if strings.TrimRight(line, "\r\n") == "event: ready" {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// streamClient is the client of a holder that holds its streams as
// requests of net/http's client: over HTTP/2 for an https url (one dial
// at a time, so requests that find every connection full wait for the
// next one rather than each dialling its own), otherwise over HTTP/1.1, a
// connection per stream. It counts the connections it dials in conns and
// sets no timeout: the streams live until the holder ends.
func streamClient(url string, roots *x509.CertPool, conns *atomic.Int64) *http.Client {
	client := newAPIClient(64)
	if strings.HasPrefix(url, "https://") {
		client = newTLSAPIClient(4, roots)
		client.Transport.(*http.Transport).MaxConnsPerHost = 1
	}
	client.Timeout = 0
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conns.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	return client
}

// holdMultiStreams creates n sessions and holds them through
// multi-session streams (POST /v1/streams) of perStream sessions each, as
// the leader tabs of n/perStream browsers would: over HTTP/2 for an https
// url, else one HTTP/1.1 connection per stream. Every session must be
// accepted in its stream's ready event.
func holdMultiStreams(ctx context.Context, url string, roots *x509.CertPool, n, perStream int) (*idleSet, error) {
	held := &idleSet{conns: &atomic.Int64{}}
	client := streamClient(url, roots, held.conns)
	transport := client.Transport.(*http.Transport)
	sessions, err := createSessions(ctx, client, url, n)
	if err != nil {
		return held, err
	}
	streamCtx, cancel := context.WithCancel(context.Background())
	held.add(func() { cancel(); transport.CloseIdleConnections() })
	wantProto := 1
	if strings.HasPrefix(url, "https://") {
		wantProto = 2
	}
	var opened atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for first := 0; first < len(sessions); first += perStream {
		group := sessions[first:min(first+perStream, len(sessions))]
		g.Go(func() error {
			type entry struct {
				SessionID string `json:"session_id"`
				Token     string `json:"token"`
			}
			entries := make([]entry, len(group))
			for i, s := range group {
				entries[i] = entry{s.ID, s.Token}
			}
			body, _ := json.Marshal(map[string]any{"sessions": entries})
			req, _ := http.NewRequestWithContext(streamCtx, "POST", url+"/v1/streams", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != wantProto {
				resp.Body.Close()
				return fmt.Errorf("POST /v1/streams: HTTP/%d %d, want HTTP/%d 200", resp.ProtoMajor, resp.StatusCode, wantProto)
			}
			rd := bufio.NewReaderSize(resp.Body, 4096)
			if err := readUntilReady(gctx, rd, resp.Body); err != nil {
				resp.Body.Close()
				return err
			}
			var ready struct {
				Sessions []string `json:"sessions"`
				Refused  []any    `json:"refused"`
			}
			line, err := rd.ReadString('\n')
			if err == nil {
				err = json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(line), "data:")), &ready)
			}
			if err != nil || len(ready.Sessions) != len(group) {
				resp.Body.Close()
				return fmt.Errorf("POST /v1/streams: ready %q (%v), want %d sessions accepted", line, err, len(group))
			}
			opened.Add(int64(len(group)))
			keepReading(resp.Body, rd)
			return nil
		})
	}
	err = g.Wait()
	held.streams = int(opened.Load())
	return held, err
}

// keepReading reads a held stream (its pings) until it ends, as a live
// client does, then closes its body.
func keepReading(body io.Closer, rd io.Reader) {
	go func() {
		defer body.Close()
		io.Copy(io.Discard, rd)
	}()
}
