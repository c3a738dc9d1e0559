package multinode_test

import (
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
)

// balancer is the test's load balancer: a TCP proxy on loopback that sends
// each new connection to the next node in turn, skipping nodes that do not
// accept, with no stickiness. A connection to a node that dies is cut on
// both sides, as a real balancer's would be.
type balancer struct {
	URL string

	listener net.Listener
	mu       sync.Mutex
	backends []string // host:port
	next     int
	conns    map[net.Conn]struct{}
	closed   bool
}

func newBalancer(t *testing.T, backends []string) *balancer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{URL: "http://" + l.Addr().String(), listener: l, backends: backends, conns: map[net.Conn]struct{}{}}
	go b.serve()
	t.Cleanup(b.close)
	return b
}

func (b *balancer) serve() {
	for {
		in, err := b.listener.Accept()
		if err != nil {
			return
		}
		go b.relay(in)
	}
}

// relay connects in to the next node that accepts and copies both ways.
func (b *balancer) relay(in net.Conn) {
	b.mu.Lock()
	start := b.next
	b.next++
	backends := b.backends
	b.mu.Unlock()
	var out net.Conn
	for i := range backends {
		c, err := net.DialTimeout("tcp", backends[(start+i)%len(backends)], time.Second)
		if err == nil {
			out = c
			break
		}
	}
	if out == nil || !b.track(in, out) {
		in.Close()
		if out != nil {
			out.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(out, in); done <- struct{}{} }()
	go func() { io.Copy(in, out); done <- struct{}{} }()
	<-done // either side ended: end both (a dead node resets its side)
	in.Close()
	out.Close()
	<-done
	b.untrack(in, out)
}

func (b *balancer) track(conns ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	for _, c := range conns {
		b.conns[c] = struct{}{}
	}
	return true
}

func (b *balancer) untrack(conns ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range conns {
		delete(b.conns, c)
	}
}

func (b *balancer) close() {
	b.listener.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for c := range b.conns {
		c.Close()
	}
}

// answersElsewhere is an HTTP proxy in front of two nodes: a client's
// answers and progress reports (POST …/results, …/progress) go to
// answers, everything else (the session, its tools, its stream or poll)
// to home. It lets the Go SDK, which speaks to one base URL, receive its
// calls on one node and answer them through another.
// It returns the proxy's URL and the count of answers it sent on.
func answersElsewhere(t *testing.T, home, answers string) (string, *atomic.Int64) {
	t.Helper()
	homeURL, err := url.Parse(home)
	if err != nil {
		t.Fatal(err)
	}
	answersURL, err := url.Parse(answers)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			target := homeURL
			if strings.HasSuffix(r.In.URL.Path, "/results") || strings.HasSuffix(r.In.URL.Path, "/progress") {
				target = answersURL
			}
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		FlushInterval: -1, // streams pass at once
	}
	var answered atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/results") {
			answered.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &answered
}
