package main

import (
	"bufio"
	"context"
	"crypto/x509"
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
	idleH1    = "h1"     // one raw HTTP/1.1 stream per session, a TCP connection each
	idleH1TLS = "h1-tls" // the same over TLS: HTTPS without HTTP/2
	idleH2    = "h2"     // one stream per session, multiplexed over HTTP/2 connections
)

// idleTransports are the ways the harness measures, in order.
var idleTransports = []string{idleH1, idleH1TLS, idleH2}

// idleMetric names the figure of a way of holding idle sessions.
func idleMetric(transport string) string {
	if transport == idleH1 {
		return "idle_session_bytes"
	}
	return "idle_session_bytes_" + strings.ReplaceAll(transport, "-", "_")
}

// idleOverTLS reports whether the gateway serves HTTPS for transport.
func idleOverTLS(transport string) bool { return transport != idleH1 }

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
	transport := fs.String("transport", idleH1, "toolgate_sse only: h1, h1-tls or h2")
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
	default:
		return fmt.Errorf("--transport %q: h1, h1-tls or h2", *transport)
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
	client := newTLSAPIClient(4, roots)
	transport := client.Transport.(*http.Transport)
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		held.conns.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	// One dial at a time: requests that find every connection full wait
	// for the next one rather than each dialling its own.
	transport.MaxConnsPerHost = 1
	client.Timeout = 0 // the streams live until the holder ends
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
			// Keep reading (pings), as a live client does.
			go func() {
				defer resp.Body.Close()
				io.Copy(io.Discard, rd)
			}()
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
