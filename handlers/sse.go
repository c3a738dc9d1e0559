package handlers

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/toolgate/toolgate"
)

// This file is the one Server-Sent Events writer: the headers of every
// stream (session streams, multi-session streams, run streams), the
// framing of every event, and the two ways bytes leave — as chunks of a
// taken-over HTTP/1.1 connection, or through the ResponseWriter with a
// flush (HTTP/2, and wherever the connection is not taken over).

// defaultStreamWriteTimeout is Options.StreamWriteTimeout when unset: it
// bounds one write to a stream; a client that does not read for this long
// is cut off (it reconnects and resumes).
const defaultStreamWriteTimeout = 10 * time.Second

// setStreamHeaders sets the headers every event stream carries.
func setStreamHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
}

// sseOut is where a stream's bytes go. A write is one flushed piece.
type sseOut interface {
	write(body []byte) error
}

// responseOut writes a stream through its ResponseWriter, flushing each
// piece.
type responseOut struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration // bounds each write
}

// startStream sends the head of a stream served through its
// ResponseWriter: the stream headers and 200. The server's write timeout
// is lifted, since streams live long; each write then has its own
// deadline, timeout from its start.
func startStream(w http.ResponseWriter, timeout time.Duration) *responseOut {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	setStreamHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	return &responseOut{w: w, rc: rc, timeout: timeout}
}

// write writes and flushes body within the timeout, then lifts the
// deadline again, so that an idle stream is not cut. Over HTTP/2 a client
// that stops reading leaves its flow-control window full and Write or
// Flush would otherwise block for ever; the deadline resets the stream.
func (o *responseOut) write(body []byte) error {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	_, err := o.w.Write(body)
	if err == nil {
		err = o.rc.Flush()
	}
	_ = o.rc.SetWriteDeadline(time.Time{})
	return err
}

// chunkOut writes a stream over a connection taken over from net/http, as
// the chunks of a chunked HTTP/1.1 body.
type chunkOut struct {
	conn    net.Conn
	timeout time.Duration // bounds each write
}

func (o chunkOut) write(body []byte) error { return writeChunk(o.conn, body, o.timeout) }

// writeChunk writes body as one chunk of a chunked HTTP/1.1 body, within
// timeout.
func writeChunk(conn net.Conn, body []byte, timeout time.Duration) error {
	frame := make([]byte, 0, len(body)+16)
	frame = strconv.AppendInt(frame, int64(len(body)), 16)
	frame = append(frame, "\r\n"...)
	frame = append(frame, body...)
	frame = append(frame, "\r\n"...)
	conn.SetWriteDeadline(time.Now().Add(timeout))
	_, err := conn.Write(frame)
	return err
}

// streamHead is the response head of a taken-over stream: the status line,
// the headers set so far (CORS among them) and the stream's own.
func streamHead(h http.Header) []byte {
	head := []byte("HTTP/1.1 200 OK\r\n")
	setStreamHeaders(h)
	h.Set("Transfer-Encoding", "chunked")
	// The connection is closed when the stream ends, even after a clean
	// end; without this a client would keep it for its next request and
	// find it reset.
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	for name, values := range h {
		for _, v := range values {
			head = append(head, name...)
			head = append(head, ": "...)
			head = append(head, v...)
			head = append(head, "\r\n"...)
		}
	}
	return append(head, "\r\n"...)
}

// appendSSE appends one event of a session's log (or of a run, whose
// events are numbered in Seq) in the text/event-stream format: its id is
// its sequence number and its data the stored object. Data is stored
// compact, so it is one line.
func appendSSE(buf []byte, ev toolgate.Event) []byte {
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Type...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, ev.Data...)
	return append(buf, "\n\n"...)
}

// appendSessionSSE appends one event of session sid on a multi-session
// stream: its id is "<sid>:<seq>" and its data the stored object with
// "session_id" and "seq" spliced in front.
func appendSessionSSE(buf []byte, sid string, ev toolgate.Event) []byte {
	buf = append(buf, "id: "...)
	buf = append(buf, sid...)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Type...)
	buf = append(buf, "\ndata: "...)
	buf = appendTagged(buf, sid, ev)
	return append(buf, "\n\n"...)
}

// appendTagged appends the event's stored JSON object with "session_id"
// (when sid is set) and "seq" spliced in front, so nothing is re-encoded.
// Session ids are the engine's (UUIDs), so they need no escaping.
func appendTagged(buf []byte, sid string, ev toolgate.Event) []byte {
	buf = append(buf, '{')
	if sid != "" {
		buf = append(buf, `"session_id":"`...)
		buf = append(buf, sid...)
		buf = append(buf, `",`...)
	}
	buf = append(buf, `"seq":`...)
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	if len(ev.Data) > 2 {
		buf = append(buf, ',')
		return append(buf, ev.Data[1:]...)
	}
	return append(buf, '}')
}

// appendPing appends a ping event.
func appendPing(buf []byte, now time.Time) []byte {
	buf = append(buf, "event: ping\ndata: {\"type\":\"ping\",\"time\":\""...)
	buf = now.UTC().AppendFormat(buf, toolgate.TimeLayout)
	return append(buf, "\"}\n\n"...)
}

// appendRetry appends the retry hint a stream opens with.
func appendRetry(buf []byte, retry time.Duration) []byte {
	buf = append(buf, "retry: "...)
	buf = strconv.AppendInt(buf, retry.Milliseconds(), 10)
	return append(buf, "\n\n"...)
}

// appendReady appends the retry hint and the ready event a session's
// stream opens with.
func appendReady(buf []byte, sid string, retry, heartbeat time.Duration) []byte {
	buf = appendRetry(buf, retry)
	buf = append(buf, "event: ready\ndata: {\"type\":\"ready\",\"session_id\":\""...)
	buf = append(buf, sid...)
	buf = append(buf, "\",\"heartbeat_ms\":"...)
	buf = strconv.AppendInt(buf, heartbeat.Milliseconds(), 10)
	return append(buf, "}\n\n"...)
}

// appendReplaced appends the stream_replaced event a session's stream
// ends with when a newer stream or poll of the session replaced it.
func appendReplaced(buf []byte, sid string) []byte {
	buf = append(buf, "event: stream_replaced\ndata: "...)
	buf = appendReplacedData(buf, sid)
	return append(buf, "\n\n"...)
}

// appendReplacedData appends the stream_replaced event's object (without
// a seq: it is not in the session's log), which also ends the events of a
// replaced poll. Session ids are the engine's (UUIDs): no escaping.
func appendReplacedData(buf []byte, sid string) []byte {
	buf = append(buf, `{"type":"stream_replaced","session_id":"`...)
	buf = append(buf, sid...)
	return append(buf, `"}`...)
}

// appendNamed appends an event without an id whose data is v encoded.
func appendNamed(buf []byte, typ string, v any) []byte {
	data, _ := json.Marshal(v) // v is one of this package's plain structs
	buf = append(buf, "event: "...)
	buf = append(buf, typ...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}
