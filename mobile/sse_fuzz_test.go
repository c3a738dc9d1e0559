package mobile

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"
	backoff "gopkg.in/cenkalti/backoff.v1"

	"github.com/toolgate/toolgate"
)

// servedBody is an http.RoundTripper that answers every request with 200
// and body as a text/event-stream, without a network.
type servedBody struct{ body []byte }

func (s servedBody) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    io.NopCloser(bytes.NewReader(s.body)),
		Request: r,
	}, nil
}

// quietLogger drops the SDK's log lines.
type quietLogger struct{}

func (quietLogger) Log(level, message string) {}

// parsedEvent is what the SDK's stream hands its event callback.
type parsedEvent struct{ id, event, data, retry string }

// parseStream reads body as one connection of the SDK's stream, through
// r3labs/sse configured as runStream configures it (its buffer limit
// maxEventBytes), without reconnecting, and returns the events the
// callback got. It fails the test when the parse does not end in time.
func parseStream(t *testing.T, body []byte, maxEventBytes int) []parsedEvent {
	t.Helper()
	stream := sse.NewClient("http://gateway.test/v1/sessions/s/events", sse.ClientMaxBufferSize(maxEventBytes))
	stream.Connection = &http.Client{Transport: servedBody{body}}
	stream.ReconnectStrategy = &backoff.StopBackOff{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var events []parsedEvent
	done := make(chan struct{})
	go func() {
		defer close(done)
		stream.SubscribeRawWithContext(ctx, func(msg *sse.Event) {
			events = append(events, parsedEvent{string(msg.ID), string(msg.Event), string(msg.Data), string(msg.Retry)})
		})
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("parsing %d bytes of stream did not end", len(body))
	}
	return events
}

// serialise writes events as a text/event-stream, each field on its own
// line(s), as the gateway writes them.
func serialise(events []parsedEvent) []byte {
	var b strings.Builder
	for _, ev := range events {
		for _, f := range []struct{ name, value string }{{"id", ev.id}, {"event", ev.event}, {"retry", ev.retry}} {
			if f.value != "" {
				b.WriteString(f.name + ": " + f.value + "\n")
			}
		}
		if ev.data != "" {
			for _, line := range strings.Split(ev.data, "\n") {
				b.WriteString("data: " + line + "\n")
			}
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// FuzzSSEStream feeds any bytes to the Go SDK as its event stream: parsing
// never panics and always ends; the events parsed, written out again as a
// stream, parse back the same; and the SDK's cursor, advanced by the
// events' ids as runStream advances it, never moves back and ends at the
// highest id. Every event also goes through the SDK's handleEvent.
func FuzzSSEStream(f *testing.F) {
	for _, seed := range []string{
		"retry: 2000\n\nevent: ready\ndata: {\"type\":\"ready\",\"session_id\":\"s\",\"heartbeat_ms\":15000}\n\n",
		"id: 7\nevent: tool_call_request\ndata: {\"seq\":7,\"type\":\"tool_call_request\",\"id\":\"c1\",\"name\":\"echo\",\"args\":{\"text\":\"hi\"},\"attempt\":1,\"deadline\":\"2030-01-01T00:00:00Z\"}\n\n" +
			"event: ping\ndata: {\"type\":\"ping\",\"time\":\"2026-01-01T00:00:00Z\"}\n\n" +
			"id: 9\nevent: call_cancelled\ndata: {\"seq\":9,\"type\":\"call_cancelled\",\"id\":\"c1\",\"reason\":\"timeout\"}\n\n",
		// Hostile: ids going back, negative, huge or not numbers; CR and
		// CRLF line ends; comments; fields without a colon; a cut-off event;
		// data of many lines; an event past the buffer; no blank line at all.
		"id: 9\nevent: tool_call_request\ndata: {\"id\":\"a\"}\n\nid: 3\nevent: tool_call_request\ndata: {\"id\":\"b\"}\n\n",
		"id: -4\nevent: call_cancelled\ndata: {}\n\nid: 9223372036854775807\nevent: tool_call_request\ndata: x\n\nid: 1e3\nevent: tool_call_request\n\n",
		"id:5\r\nevent:tool_call_request\r\ndata:{\"id\":\"c\"}\r\n\r\n: comment\r\rid\revent\rdata\r\r",
		"data\ndata:\ndata: two\ndata:  spaced\n\n:\n\nevent: \n\nid: \n\n",
		"id: 1\nevent: tool_call_request\ndata: {\"id\":\"cut off",
		"data: " + strings.Repeat("x", 70<<10) + "\n\nid: 2\nevent: tool_call_request\ndata: {}\n\n",
		strings.Repeat("\n", 100) + strings.Repeat("data: a\n", 300) + "\n",
		"", "\n\n", "\r\n\r\n", "\x00\xff\xfe", "id: \x00\n\n",
	} {
		f.Add([]byte(seed))
	}
	// The seeds parse with the SDK's limit; fuzzed inputs of a few KB are
	// far under it, so the limit itself is exercised with a small one.
	const smallLimit = 64 << 10
	f.Fuzz(func(t *testing.T, body []byte) {
		events := parseStream(t, body, smallLimit)

		// Written out again, the events parse back the same. (Written out, an
		// event may be a little longer: "data:x" becomes "data: x".)
		again := parseStream(t, serialise(events), 2*smallLimit+len(body))
		if len(again) != len(events) {
			t.Fatalf("%q parsed to %d events, written out and parsed again to %d:\n%q\n%q", body, len(events), len(again), events, again)
		}
		for i := range events {
			if events[i] != again[i] {
				t.Fatalf("%q: event %d parsed as %q, written out and parsed again as %q", body, i, events[i], again[i])
			}
		}

		// The cursor, as runStream advances it, never moves back.
		c := NewClient("http://gateway.test")
		c.SetLogger(quietLogger{})
		r := newReceiver(c, nil, func() {})
		var highest int64
		seen := false
		for _, ev := range events {
			if ev.event == toolgate.EventToolCallRequest || ev.event == toolgate.EventCallCancelled {
				if seq, err := strconv.ParseInt(ev.id, 10, 64); err == nil {
					before, had := c.session.position()
					c.session.advance(seq)
					after, _ := c.session.position()
					if had && after < before {
						t.Fatalf("%q: the cursor went back from %d to %d on id %d", body, before, after, seq)
					}
					if !seen || seq > highest {
						highest, seen = seq, true
					}
				}
			}
			r.handleEvent(ev.event, []byte(ev.data), sessionCredentials{id: "s", token: "t"})
		}
		if cursor, ok := c.session.position(); seen && (!ok || cursor < highest) {
			t.Fatalf("%q: cursor %d (set %v) after events up to id %d", body, cursor, ok, highest)
		}
	})
}
