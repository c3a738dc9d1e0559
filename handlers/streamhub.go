package handlers

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
)

// streamWorkers is how many goroutines write to all hijacked streams.
const streamWorkers = 8

// streamWriteTimeout bounds one write to a stream; a client that does not
// read for this long is cut off (it reconnects and resumes).
const streamWriteTimeout = 10 * time.Second

// streamHub serves event streams without a goroutine per stream. After a
// stream's first events are written, its HTTP/1.1 connection is taken over
// from net/http (which otherwise keeps two goroutines, with their stacks,
// and 8 KB of buffers for every open stream, idle or not). The engine
// notifies the hub when a session's log grows or the session ends; a small
// pool of workers then writes what is new, and one ticker schedules the
// pings, whose failed writes are how a vanished client is noticed.
type streamHub struct {
	eng       Delivery
	heartbeat time.Duration
	work      chan *hubStream
	stop      chan struct{}
	workers   sync.WaitGroup

	mu      sync.Mutex
	streams map[*hubStream]struct{}
	started bool // the workers run (start was called before close)
	closed  bool
}

// hubStream is one taken-over stream.
type hubStream struct {
	hub       *streamHub
	sid       string
	ready     atomic.Bool // set once the connection is taken over
	scheduled atomic.Bool // queued for a worker
	pingDue   atomic.Bool

	mu     sync.Mutex // held by the worker writing; guards the fields below
	conn   net.Conn
	l      Listener
	cursor int64
	ended  bool
}

// newStreamHub builds a hub; its workers run from start until close.
func newStreamHub(eng Delivery, heartbeat time.Duration) *streamHub {
	return &streamHub{
		eng: eng, heartbeat: heartbeat,
		work:    make(chan *hubStream, 4096),
		stop:    make(chan struct{}),
		streams: map[*hubStream]struct{}{},
	}
}

// start starts the writing workers and the ping ticker. It does nothing
// when they already run or the hub is closed.
func (h *streamHub) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started || h.closed {
		return
	}
	h.started = true
	h.workers.Add(streamWorkers + 1)
	for range streamWorkers {
		go h.runWorker()
	}
	go h.runPings()
}

// wake is the stream's engine notification: schedule a write.
func (s *hubStream) wake() { s.hub.schedule(s) }

func (h *streamHub) schedule(s *hubStream) {
	if !s.ready.Load() || !s.scheduled.CompareAndSwap(false, true) {
		return
	}
	select {
	case h.work <- s:
	default:
		// The queue is full; queue it from a goroutine rather than block
		// the engine's notifier.
		go func() {
			select {
			case h.work <- s:
			case <-h.stop:
			}
		}()
	}
}

func (h *streamHub) runWorker() {
	defer h.workers.Done()
	for {
		select {
		case <-h.stop:
			return
		case s := <-h.work:
			h.serve(s)
		}
	}
}

// runPings marks every stream's ping due each heartbeat.
func (h *streamHub) runPings() {
	defer h.workers.Done()
	t := time.NewTicker(h.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.mu.Lock()
			all := make([]*hubStream, 0, len(h.streams))
			for s := range h.streams {
				all = append(all, s)
			}
			h.mu.Unlock()
			for _, s := range all {
				s.pingDue.Store(true)
				h.schedule(s)
			}
		}
	}
}

// adopt starts serving a stream whose connection has been taken over and
// whose first events were written up to cursor. A hub that is not running
// (not started, or closed) ends the stream at once rather than hold it
// with nobody to write to it; the client reconnects.
func (h *streamHub) adopt(s *hubStream, conn net.Conn, l Listener, cursor int64) {
	s.conn, s.l, s.cursor = conn, l, cursor
	h.mu.Lock()
	if !h.started || h.closed {
		h.mu.Unlock()
		s.end(false)
		return
	}
	h.streams[s] = struct{}{}
	h.mu.Unlock()
	s.ready.Store(true)
	h.schedule(s) // whatever arrived since the first read
	go s.watchClose()
}

// watchClose ends the stream as soon as its client goes away, so that the
// session shows offline and calls are no longer written into a dead
// connection. A client sends nothing on a stream, so any read that returns
// means the end. This small goroutine, parked in the network poller, is all
// an idle stream costs beyond its connection.
func (s *hubStream) watchClose() {
	var b [1]byte
	s.conn.SetReadDeadline(time.Time{})
	s.conn.Read(b[:])
	s.end(false)
}

// serve writes what is new for one stream: its events after the cursor,
// a ping if one is due, and the end if its session has ended.
func (h *streamHub) serve(s *hubStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scheduled.Store(false)
	if s.ended {
		return
	}
	ended := false
	select {
	case <-s.l.Done():
		ended = true
	default:
	}
	events, cursor, err := h.eng.EventsAfter(context.Background(), s.sid, s.cursor)
	if err != nil {
		s.endLocked(false)
		return
	}
	var body []byte
	for _, ev := range events {
		body = appendSSE(body, ev)
	}
	if s.pingDue.Swap(false) {
		body = appendPing(body, time.Now())
	}
	if len(body) > 0 {
		// Recorded before the bytes leave, so that an answer finds its call delivered.
		h.eng.Delivered(s.sid, events)
		if err := writeChunk(s.conn, body); err != nil {
			s.endLocked(false)
			return
		}
	}
	s.cursor = cursor
	if ended {
		s.endLocked(true)
	}
}

func (s *hubStream) end(graceful bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(graceful)
}

// endLocked closes the stream; graceful ends the chunked body first, so
// the client sees a clean end rather than a broken connection.
func (s *hubStream) endLocked(graceful bool) {
	if s.ended {
		return
	}
	s.ended = true
	if graceful {
		s.conn.SetWriteDeadline(time.Now().Add(time.Second))
		s.conn.Write([]byte("0\r\n\r\n"))
	}
	s.conn.Close()
	s.l.Close()
	h := s.hub
	h.mu.Lock()
	delete(h.streams, s)
	h.mu.Unlock()
}

// close ends every stream and stops the workers (at shutdown). It may be
// called without start, and more than once.
func (h *streamHub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	all := make([]*hubStream, 0, len(h.streams))
	for s := range h.streams {
		all = append(all, s)
	}
	h.mu.Unlock()
	close(h.stop)
	h.workers.Wait()
	for _, s := range all {
		s.end(true)
	}
}

// writeChunk writes body as one chunk of a chunked HTTP/1.1 body.
func writeChunk(conn net.Conn, body []byte) error {
	frame := make([]byte, 0, len(body)+16)
	frame = strconv.AppendInt(frame, int64(len(body)), 16)
	frame = append(frame, "\r\n"...)
	frame = append(frame, body...)
	frame = append(frame, "\r\n"...)
	conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	_, err := conn.Write(frame)
	return err
}

// streamHead is the response head of a taken-over stream: the status line,
// the headers set so far (CORS among them) and the stream's own.
func streamHead(h http.Header) []byte {
	head := []byte("HTTP/1.1 200 OK\r\n")
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
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

// appendSSE appends one event in the text/event-stream format. Data is
// stored compact, so it is one line.
func appendSSE(buf []byte, ev toolgate.Event) []byte {
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Type...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, ev.Data...)
	return append(buf, "\n\n"...)
}

// appendPing appends a ping event.
func appendPing(buf []byte, now time.Time) []byte {
	buf = append(buf, "event: ping\ndata: {\"type\":\"ping\",\"time\":\""...)
	buf = now.UTC().AppendFormat(buf, toolgate.TimeLayout)
	return append(buf, "\"}\n\n"...)
}

// appendReady appends the retry hint and the ready event a stream opens with.
func appendReady(buf []byte, sid string, retry, heartbeat time.Duration) []byte {
	buf = append(buf, "retry: "...)
	buf = strconv.AppendInt(buf, retry.Milliseconds(), 10)
	buf = append(buf, "\n\nevent: ready\ndata: {\"type\":\"ready\",\"session_id\":\""...)
	buf = append(buf, sid...)
	buf = append(buf, "\",\"heartbeat_ms\":"...)
	buf = strconv.AppendInt(buf, heartbeat.Milliseconds(), 10)
	return append(buf, "}\n\n"...)
}
