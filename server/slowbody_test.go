package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/server"
)

// Slow clients cut off (--body-read-timeout): a body or headers trickled
// in end after the timeout, not after minutes, over HTTP/1.1 and HTTP/2;
// streams, which read their body first, live on past it.

const slowTimeout = 300 * time.Millisecond

// slowGateway is a gateway whose body read timeout is slowTimeout.
func slowGateway(t *testing.T) *gateway {
	return startGateway(t, func(c *server.Config) {
		c.BodyReadTimeout = slowTimeout
		c.Heartbeat = 100 * time.Millisecond
	})
}

// trickle writes one byte of s every 50 ms until s is written or a write
// fails (the gateway cut the connection).
func trickle(w io.Writer, s string) {
	for i := range len(s) {
		if _, err := w.Write([]byte{s[i]}); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond) // the trickle itself, not a wait
	}
}

// Before the fix the gateway read a trickled body for as long as it came:
// this one, 200 bytes at 20 a second, was answered after 10 s. A request
// that is refused anyway (a Host the gateway does not answer for, a body
// that is not JSON) is cut off just the same: its refusal must not leave
// net/http reading the rest of the body after the handler, without a
// deadline.
func TestSlowBodyCutOff(t *testing.T) {
	g := slowGateway(t)
	for _, head := range []string{
		"Host: 127.0.0.1\r\nContent-Type: application/json",
		"Host: evil.example\r\nContent-Type: application/json",
		"Host: 127.0.0.1\r\nContent-Type: text/plain",
	} {
		t.Run(head, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, "POST /v1/sessions HTTP/1.1\r\n"+head+"\r\nContent-Length: 200\r\n\r\n")
			go trickle(conn, `{"client":{"name":"`+strings.Repeat("x", 200))
			start := time.Now()
			conn.SetReadDeadline(start.Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no reply to a trickled body within 5 s: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			took := time.Since(start)
			if resp.StatusCode != 400 || !strings.Contains(string(body), "did not arrive within 300ms") || !resp.Close {
				t.Fatalf("a trickled body got %d %s (close %v), want 400 and the connection closed", resp.StatusCode, body, resp.Close)
			}
			if took > 3*slowTimeout {
				t.Errorf("cut off after %s, want about %s", took, slowTimeout)
			}
		})
	}
}

func TestSlowHeadersCutOff(t *testing.T) {
	g := slowGateway(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go trickle(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "+strings.Repeat("y", 200)+"\r\n\r\n")
	start := time.Now()
	conn.SetReadDeadline(start.Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	// The gateway closes while bytes it never read are still arriving, so
	// the kernel may end the connection with a reset instead of a FIN:
	// either is the cut-off. A read that hit its own deadline is not.
	if errors.Is(err, syscall.ECONNRESET) {
		err = nil
	}
	if took := time.Since(start); err != nil || took > 3*slowTimeout {
		t.Fatalf("trickled headers: the connection ended after %s (%v), want about %s", took, err, slowTimeout)
	}
}

// Over HTTP/2 the deadline is the request's stream's: the trickled body
// is refused and the connection's other streams go on.
func TestSlowBodyCutOffOverHTTP2(t *testing.T) {
	g := slowGateway(t)
	ts := httptest.NewUnstartedServer(g.Server.Handler())
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	go trickle(pw, `{"client":{"name":"`+strings.Repeat("x", 200))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/sessions", pr)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 400 || !strings.Contains(string(body), "did not arrive within") {
		t.Fatalf("HTTP/%d %d %s, want HTTP/2 400", resp.ProtoMajor, resp.StatusCode, body)
	}
	if took := time.Since(start); took > 3*slowTimeout {
		t.Errorf("cut off after %s, want about %s", took, slowTimeout)
	}
	resp, err = ts.Client().Get(ts.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz after: %v", err)
	}
	resp.Body.Close()
}

// A stream, and a multi-session stream whose body was read at once, go on
// past the timeout: pings keep coming well after it.
func TestStreamsOutliveTheBodyTimeout(t *testing.T) {
	g := slowGateway(t)
	a, b := g.twoSessions()
	single := g.openStream(a, "")
	multi, _ := g.openMulti(entry(b, -1))
	deadline := time.Now().Add(4 * slowTimeout)
	for _, st := range []*stream{single, multi} {
		for {
			ev, ok := <-st.events
			if !ok {
				t.Fatal("a stream ended: the body read timeout cut it")
			}
			if ev.Event == "ping" && time.Now().After(deadline) {
				break
			}
		}
	}
}

// After the 400 for a trickled body the connection is closed, while the
// client still trickles (here a byte every 200 ms of a 1000-byte body).
// Before, net/http went on reading the rest of the body after the handler,
// without a deadline, and the connection stayed open for as long as bytes
// kept coming, holding its place under --max-connections.
func TestTrickledBodyConnectionClosedAfter400(t *testing.T) {
	g := slowGateway(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond): // the trickle itself, not a wait
			}
			if _, err := conn.Write([]byte{'x'}); err != nil {
				return
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no reply to a trickled body: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 400 || !resp.Close {
		t.Fatalf("a trickled body got %d (close %v), want 400 with Connection: close", resp.StatusCode, resp.Close)
	}
	answered := time.Now()
	conn.SetReadDeadline(answered.Add(5 * time.Second))
	_, err = io.Copy(io.Discard, br)
	if errors.Is(err, syscall.ECONNRESET) {
		err = nil // closed with bytes unread: a reset is the close too
	}
	if err != nil {
		t.Fatalf("the connection was still open %s after the 400 while the body trickled: %v", time.Since(answered).Round(time.Millisecond), err)
	}
}
