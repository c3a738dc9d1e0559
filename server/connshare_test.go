package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/server"
)

// dialFrom connects to the gateway from the local address ip (any of
// 127/8 on Linux), as another client would.
func (g *gateway) dialFrom(t *testing.T, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// healthz sends GET /healthz on conn (kept alive) and returns the status,
// or an error when the gateway closed the connection instead.
func healthz(conn net.Conn, br *bufio.Reader) (int, error) {
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestConnectionsPerAddress: one client address holds at most
// --max-connections-per-address connections; its next is closed at once
// (no request on it is served), while another address is served, and once
// one of its connections closes it may open another. Before, one address
// could hold every connection of --max-connections, and other clients
// waited in the accept queue.
func TestConnectionsPerAddress(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MaxConnections, c.MaxConnectionsPerAddress = 100, 3 })
	var held []net.Conn
	for i := range 3 {
		conn := g.dialFrom(t, "127.0.0.3")
		if status, err := healthz(conn, bufio.NewReader(conn)); err != nil || status != 200 {
			t.Fatalf("connection %d within the share: %d %v", i+1, status, err)
		}
		held = append(held, conn)
	}
	over := g.dialFrom(t, "127.0.0.3")
	if status, err := healthz(over, bufio.NewReader(over)); err == nil {
		t.Fatalf("a fourth connection from one address was served (%d); want it closed", status)
	}
	other := g.dialFrom(t, "127.0.0.4")
	if status, err := healthz(other, bufio.NewReader(other)); err != nil || status != 200 {
		t.Fatalf("another address while the first holds its share: %d %v", status, err)
	}
	held[0].Close()
	testwait.Until(t, 10*time.Second, "a connection once one of the address's closed", func() bool {
		conn := g.dialFrom(t, "127.0.0.3")
		status, err := healthz(conn, bufio.NewReader(conn))
		return err == nil && status == 200
	})
}

// TestProxiedRequestsPerAddress: behind a trusted proxy the listener does
// not count the proxy's connections (it carries many clients); the share
// is kept per client address named by X-Forwarded-For: with its share of
// streams open, that client's next request is 429 RATE_LIMITED with
// Retry-After, another client's is served, and once a stream ends the
// client may go on.
func TestProxiedRequestsPerAddress(t *testing.T) {
	g := startGateway(t, func(c *server.Config) {
		c.MaxConnections, c.MaxConnectionsPerAddress = 100, 2
		c.TrustedProxies = []string{"127.0.0.1"}
		c.Heartbeat = 100 * time.Millisecond
	})
	s := g.newSession("behind a proxy")
	open := func(client string) *stream {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", g.URL+"/v1/sessions/"+s.ID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("X-Forwarded-For", client)
		return g.readStream(req, cancel)
	}
	get := func(client string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", g.URL+"/v1/sessions/"+s.ID, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	first := open("203.0.113.7")
	defer first.Close()
	second := open("203.0.113.7")
	defer second.Close()
	resp, body := get("203.0.113.7")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" || !strings.Contains(body, "client address 203.0.113.7 already has 2 requests in flight") {
		t.Fatalf("a third request of a client with two streams through the proxy: %d (Retry-After %q) %s; want 429", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, body := get("203.0.113.8"); resp.StatusCode != 200 {
		t.Fatalf("another client through the same proxy: %d %s", resp.StatusCode, body)
	}
	second.Close()
	testwait.Until(t, 10*time.Second, "the client's request once a stream ended", func() bool {
		resp, _ := get("203.0.113.7")
		return resp.StatusCode == 200
	})
}

// TestDerivedConnectionShareLeavesRoom: the share per address derived
// from --max-connections (no --max-connections-per-address) is a quarter
// of it, so two addresses holding all they may still leave a third
// address room. Before, a floor of 32 made it half of 64, and two
// addresses locked everyone else out.
func TestDerivedConnectionShareLeavesRoom(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MaxConnections = 64 })
	for _, ip := range []string{"127.0.0.6", "127.0.0.9"} {
		held := 0
		for range 33 {
			conn := g.dialFrom(t, ip)
			if _, err := healthz(conn, bufio.NewReader(conn)); err != nil {
				break // closed: past the address's share
			}
			held++
		}
		if held != 16 {
			t.Fatalf("%s held %d connections; want a quarter of 64, 16", ip, held)
		}
	}
	other := g.dialFrom(t, "127.0.0.10")
	if status, err := healthz(other, bufio.NewReader(other)); err != nil || status != 200 {
		t.Fatalf("a third address beside two holding their shares: %d %v", status, err)
	}
}
