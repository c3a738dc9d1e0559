package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testlog"
)

// lockedBuffer is the tests' log sink (the shared one).
type lockedBuffer = testlog.LockedBuffer

// With --max-connections 8 and 8 streams held, a 9th connection is not
// refused: it waits in the accept queue, and its request is answered as
// soon as a stream closes. Reaching the limit is logged once.
func TestConnectionLimitQueuesTheNinth(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConnections = 8
	cfg.MaxConnectionsPerAddress = -1 // every connection comes from 127.0.0.1: this is about the whole limit
	logs := &lockedBuffer{}
	srv, _ := startServerLogging(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	sess, err := srv.Engine.Sessions.CreateSession(context.Background(), toolgate.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.listener.Addr().String()

	// Eight streams, each on a connection of its own.
	var streams []net.Conn
	for range 8 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		io.WriteString(conn, "GET /v1/sessions/"+sess.SessionID+"/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+sess.Token+"\r\n\r\n")
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, "200") {
			t.Fatalf("stream: %q %v", line, err)
		}
		streams = append(streams, conn)
	}

	// The ninth connection is taken by the kernel (not refused), and its
	// request waits: nothing comes back while every slot is held.
	ninth, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("the ninth connection was refused: %v", err)
	}
	defer ninth.Close()
	io.WriteString(ninth, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	reply := bufio.NewReader(ninth)
	ninth.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if line, err := reply.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the ninth request was answered %q (%v) while 8 streams held every slot", line, err)
	}
	if !strings.Contains(logs.String(), "the connection limit is reached") {
		t.Error("reaching the limit was not logged")
	}
	// A stream closes: the ninth is accepted and answered.
	streams[0].Close()
	ninth.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := reply.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("GET /healthz after a slot freed: %q, %v", line, err)
	}
	if n := strings.Count(logs.String(), "the connection limit is reached"); n != 1 {
		t.Errorf("the limit was logged %d times, want once", n)
	}
}

// The connection settings: zero takes the defaults, a negative one is
// refused with a sentence naming it.
func TestConnectionSettingsValidated(t *testing.T) {
	d := Config{}.withDefaults()
	if d.MaxStreamsPerSession != 8 || d.BodyReadTimeout != 10*time.Second || d.MaxConnections != 0 {
		t.Fatalf("defaults: %d streams per session, %s body read timeout, %d connections", d.MaxStreamsPerSession, d.BodyReadTimeout, d.MaxConnections)
	}
	for name, c := range map[string]Config{
		"--max-streams-per-session": {MaxStreamsPerSession: -1},
		"--max-connections":         {MaxConnections: -1},
		"--body-read-timeout":       {BodyReadTimeout: -time.Second},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s negative: %v", name, err)
		}
	}
}
