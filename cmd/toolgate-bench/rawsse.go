package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// The idle-session and recovery figures hold thousands of sessions from
// one client process, where thousands of full SDK clients would measure
// the client more than the gateway. Their clients are raw: one TCP
// connection per session speaking the protocol's stream directly, with one
// goroutine and a 4 KiB read buffer each.

// rawSession is a session's credentials.
type rawSession struct {
	ID    string `json:"session_id"`
	Token string `json:"token"`
}

// newAPIClient is an HTTP client for many short requests to one host.
func newAPIClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}

// postJSON posts body with a bearer credential and decodes a 2xx reply.
func postJSON(ctx context.Context, client *http.Client, url, bearer string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	status, data, err := postRaw(ctx, client, url, bearer, b)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", url, status, bytes.TrimSpace(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// newTLSAPIClient is newAPIClient for an HTTPS gateway whose certificate
// roots signed; it negotiates HTTP/2, so its requests share one connection.
func newTLSAPIClient(conns int, roots *x509.CertPool) *http.Client {
	c := newAPIClient(conns)
	t := c.Transport.(*http.Transport)
	t.TLSClientConfig = &tls.Config{RootCAs: roots}
	t.ForceAttemptHTTP2 = true
	return c
}

// createSessions creates n sessions through client, each offering the
// echo tool.
func createSessions(ctx context.Context, client *http.Client, base string, n int) ([]rawSession, error) {
	sessions := make([]rawSession, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			s := &sessions[i]
			if err := postJSON(gctx, client, base+"/v1/sessions", "", map[string]any{"client": map[string]string{"name": "toolgate-bench", "platform": "other"}}, s); err != nil {
				return err
			}
			reg := map[string]any{"type": "register_tools", "tools": []map[string]any{{"name": echoTool, "description": echoToolDesc, "parameters": json.RawMessage(echoToolSchema)}}}
			return postJSON(gctx, client, base+"/v1/sessions/"+s.ID+"/tools", s.Token, reg, nil)
		})
	}
	return sessions, g.Wait()
}

// sseEvent is one event read from a stream.
type sseEvent struct {
	ID    int64 // 0 when the event had no id: line
	Event string
	Data  string
}

// rawStream is one open event stream of a session.
type rawStream struct {
	conn net.Conn
	body io.ReadCloser
	rd   *bufio.Reader
}

// openStream dials the gateway and opens the session's event stream,
// resuming after lastID when it is positive. An https base is dialled with
// TLS, trusting roots and offering HTTP/1.1 only (the connection is the
// stream's alone, as over plain HTTP).
func openStream(ctx context.Context, base string, roots *x509.CertPool, s rawSession, lastID int64) (*rawStream, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	var conn net.Conn
	var err error
	if host, ok := strings.CutPrefix(base, "https://"); ok {
		td := &tls.Dialer{NetDialer: d, Config: &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}}}
		conn, err = td.DialContext(ctx, "tcp", host)
	} else {
		conn, err = d.DialContext(ctx, "tcp", strings.TrimPrefix(base, "http://"))
	}
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest("GET", base+"/v1/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		conn.Close()
		return nil, fmt.Errorf("GET events: status %d", resp.StatusCode)
	}
	conn.SetDeadline(time.Time{})
	return &rawStream{conn: conn, body: resp.Body, rd: bufio.NewReaderSize(resp.Body, 4096)}, nil
}

// next reads the next event.
func (r *rawStream) next() (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.Event != "" || ev.Data != "" {
				return ev, nil
			}
		case strings.HasPrefix(line, "id:"):
			ev.ID, _ = strconv.ParseInt(strings.TrimSpace(line[3:]), 10, 64)
		case strings.HasPrefix(line, "event:"):
			ev.Event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			ev.Data += strings.TrimPrefix(line[5:], " ")
		}
	}
}

// waitReady reads events until "ready".
func (r *rawStream) waitReady(timeout time.Duration) error {
	r.conn.SetReadDeadline(time.Now().Add(timeout))
	defer r.conn.SetReadDeadline(time.Time{})
	for {
		ev, err := r.next()
		if err != nil {
			return fmt.Errorf("stream ended before ready: %w", err)
		}
		if ev.Event == "ready" {
			return nil
		}
	}
}

// close ends the stream.
func (r *rawStream) close() { r.conn.Close() }

// callID returns the call id of a tool_call_request event.
func callID(ev sseEvent) string {
	if ev.Event != "tool_call_request" {
		return ""
	}
	var m struct {
		ID string `json:"id"`
	}
	json.Unmarshal([]byte(ev.Data), &m)
	return m.ID
}
