package handlers

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// streamWorkers is how many goroutines write to all hijacked streams.
const streamWorkers = 8

// streamHub serves event streams without a goroutine per stream. After a
// stream's first events are written, its HTTP/1.1 connection is taken over
// from net/http (which otherwise keeps two goroutines, with their stacks,
// and 8 KB of buffers for every open stream, idle or not). The engine
// notifies the hub when a session's log grows or the session ends; a small
// pool of workers then writes what is new, and one goroutine marks each
// stream's ping due on the stream's own interval (pingSchedule); failed
// writes are how a vanished client is noticed.
type streamHub struct {
	// writeTimeout bounds each write to a taken-over connection.
	writeTimeout time.Duration
	work         chan *hubStream
	stop         chan struct{}
	workers      sync.WaitGroup
	// pingsChanged wakes the ping goroutine when a stream's first ping is
	// due before the one it sleeps for.
	pingsChanged chan struct{}

	mu      sync.Mutex
	streams map[*hubStream]struct{}
	pings   pingSchedule
	started bool // the workers run (start was called before close)
	closed  bool
}

// hubStream is one taken-over stream: its connection and the event
// stream written to it.
type hubStream struct {
	hub       *streamHub
	stream    *eventStream
	heartbeat time.Duration // its ping interval
	ready     atomic.Bool   // set once the connection is taken over
	scheduled atomic.Bool   // queued for a worker

	mu    sync.Mutex // held by the worker writing; guards the fields below
	conn  net.Conn
	ended bool
}

// newStreamHub builds a hub; its workers run from start until close.
func newStreamHub(writeTimeout time.Duration) *streamHub {
	return &streamHub{
		pingsChanged: make(chan struct{}, 1),
		writeTimeout: writeTimeout,
		work:         make(chan *hubStream, 4096),
		stop:         make(chan struct{}),
		streams:      map[*hubStream]struct{}{},
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

// newStream returns the hub's handle of stream, pinged every heartbeat,
// not yet taken over: the stream's wake schedules it once adopt has made
// it ready.
func (h *streamHub) newStream(stream *eventStream, heartbeat time.Duration) *hubStream {
	s := &hubStream{hub: h, stream: stream, heartbeat: heartbeat}
	stream.wake = func() { h.schedule(s) }
	return s
}

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

// runPings marks each stream's ping due when its time comes (see
// pingSchedule) and schedules the stream for a worker.
func (h *streamHub) runPings() {
	defer h.workers.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		next, ok := h.pings.next()
		h.mu.Unlock()
		wait := time.Hour
		if ok {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-h.stop:
			return
		case <-h.pingsChanged:
			continue
		case <-timer.C:
		}
		h.mu.Lock()
		due := h.pings.popDue(time.Now(), func(s *hubStream) bool {
			_, open := h.streams[s]
			return open
		})
		h.mu.Unlock()
		for _, s := range due {
			s.stream.pingDue.Store(true)
			h.schedule(s)
		}
	}
}

// adopt starts serving a stream whose connection has been taken over and
// whose first events were written. A hub that is not running (not
// started, or closed) ends the stream at once rather than hold it with
// nobody to write to it; the client reconnects.
func (h *streamHub) adopt(s *hubStream, conn net.Conn) {
	s.conn = conn
	h.mu.Lock()
	if !h.started || h.closed {
		h.mu.Unlock()
		s.end(false)
		return
	}
	h.streams[s] = struct{}{}
	first := h.pings.add(s, time.Now())
	h.mu.Unlock()
	if first {
		select {
		case h.pingsChanged <- struct{}{}:
		default:
		}
	}
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

// serve writes what is new for one stream (see eventStream.step) and
// ends it when its session has ended or a write failed.
func (h *streamHub) serve(s *hubStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scheduled.Store(false)
	if s.ended {
		return
	}
	switch s.stream.step(context.Background(), true) {
	case streamEnds:
		s.endLocked(true)
	case streamBroken:
		s.endLocked(false)
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
	s.stream.end(!graceful)
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
