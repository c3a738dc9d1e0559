package mcpserve

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"sync"
	"time"
)

// keepAliveComment is written on a streamed reply that has been quiet for
// the heartbeat interval: an SSE comment, which clients ignore, so that a
// proxy or a host does not give up on the stream as dead.
const keepAliveComment = ": keep-alive\n\n"

// errReplyDone is returned by a write after the request has been served.
var errReplyDone = errors.New("mcpserve: the reply has been served")

// streamWriter is the ResponseWriter the SDK writes a reply through. When
// the reply is an event stream (text/event-stream) it adds
// X-Accel-Buffering: no (so that nginx passes each event on at once), and
// writes a keep-alive comment when nothing was written for the heartbeat
// interval. The SDK writes each event with one Write then a Flush, from
// more than one goroutine; every write here, the SDK's and the
// keep-alive's, is made under one mutex, so a comment never lands inside
// an event.
//
// Each write and flush must be taken by the host within writeTimeout (a
// deadline on the connection, lifted after it, so that a quiet stream is
// not cut): a host that stops reading would otherwise block the write for
// ever once the socket's buffers are full — and with it every other host,
// as the SDK tells hosts of list changes one after another. A write that
// fails ends the request (giveUp): the host is cut off, later writes fail
// at once.
type streamWriter struct {
	w            http.ResponseWriter
	rc           *http.ResponseController
	heartbeat    time.Duration
	writeTimeout time.Duration
	giveUp       context.CancelFunc

	mu          sync.Mutex
	wroteHeader bool
	ticking     bool  // the keep-alive goroutine runs
	quiet       bool  // nothing written since the last tick
	served      bool  // the request has been served: no more writes
	muted       bool  // the rest of the reply is not sent (mute)
	failed      error // a write failed: the host is cut off
	stop        chan struct{}
	stopped     sync.WaitGroup
}

// newStreamWriter wraps w; giveUp ends the request being served.
func newStreamWriter(w http.ResponseWriter, heartbeat, writeTimeout time.Duration, giveUp context.CancelFunc) *streamWriter {
	return &streamWriter{w: w, rc: http.NewResponseController(w), heartbeat: heartbeat, writeTimeout: writeTimeout,
		giveUp: giveUp, stop: make(chan struct{})}
}

// Header implements http.ResponseWriter.
func (s *streamWriter) Header() http.Header { return s.w.Header() }

// WriteHeader implements http.ResponseWriter.
func (s *streamWriter) WriteHeader(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeHeaderLocked(status)
}

func (s *streamWriter) writeHeaderLocked(status int) {
	if s.wroteHeader || s.served {
		return
	}
	s.wroteHeader = true
	if status == http.StatusOK && isEventStream(s.w.Header().Get("Content-Type")) {
		s.w.Header().Set("X-Accel-Buffering", "no")
		s.startKeepAliveLocked()
	}
	s.w.WriteHeader(status)
}

func (s *streamWriter) startKeepAliveLocked() {
	if s.ticking {
		return
	}
	s.ticking = true
	s.stopped.Add(1)
	go s.keepAlive()
}

// streamingStarted is told by a tools/call handler once its call is
// stored and it waits for the call's end, maybe for minutes: the SDK
// writes nothing, not even the reply's header, until the first event, so
// the keep-alive starts now (it writes the header with its first comment)
// when the reply is to be an event stream. The SDK set the reply's
// headers before it handed the request on to the handler, so reading them
// here does not race with it.
func (s *streamWriter) streamingStarted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.served || s.wroteHeader || !isEventStream(s.w.Header().Get("Content-Type")) {
		return
	}
	s.startKeepAliveLocked()
}

// Write implements http.ResponseWriter.
func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.served {
		return 0, errReplyDone
	}
	if s.failed != nil {
		return 0, s.failed
	}
	s.writeHeaderLocked(http.StatusOK)
	s.quiet = false
	if s.muted {
		return len(p), nil
	}
	var n int
	err := s.timedLocked(func() (err error) {
		n, err = s.w.Write(p)
		return err
	})
	return n, err
}

// Flush implements http.Flusher.
func (s *streamWriter) Flush() { _ = s.FlushError() }

// FlushError flushes what was written (http.NewResponseController uses
// it).
func (s *streamWriter) FlushError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.served {
		return errReplyDone
	}
	if s.failed != nil {
		return s.failed
	}
	s.writeHeaderLocked(http.StatusOK)
	if s.muted {
		return nil
	}
	return s.timedLocked(s.rc.Flush)
}

// timedLocked runs one write or flush within the write timeout, then lifts
// the deadline; when it fails, the host is cut off.
func (s *streamWriter) timedLocked(op func() error) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	err := op()
	_ = s.rc.SetWriteDeadline(time.Time{})
	if err != nil {
		s.failed = err
		s.giveUp()
	}
	return err
}

// mute drops the rest of the reply (its header still goes): for a request
// the host gave up on, which MCP says is not answered.
func (s *streamWriter) mute() {
	s.mu.Lock()
	s.muted = true
	s.mu.Unlock()
}

// Unwrap gives http.NewResponseController the writer underneath, for
// what streamWriter does not implement itself (deadlines).
func (s *streamWriter) Unwrap() http.ResponseWriter { return s.w }

// keepAlive writes the comment on each tick that follows a quiet
// interval, until finish.
func (s *streamWriter) keepAlive() {
	defer s.stopped.Done()
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.mu.Lock()
			if !s.served && !s.muted && s.failed == nil && s.quiet {
				s.writeHeaderLocked(http.StatusOK)
				_ = s.timedLocked(func() error {
					if _, err := s.w.Write([]byte(keepAliveComment)); err != nil {
						return err
					}
					return s.rc.Flush()
				})
			}
			s.quiet = true
			s.mu.Unlock()
		}
	}
}

// finish ends the keep-alive and refuses later writes; call it before the
// handler returns (net/http forbids writes after). What is still buffered
// is flushed within the write timeout, so that net/http's own last write
// finds the way clear.
func (s *streamWriter) finish() {
	s.mu.Lock()
	if !s.served && s.wroteHeader && s.failed == nil && !s.muted {
		_ = s.timedLocked(s.rc.Flush)
	}
	s.served = true
	s.mu.Unlock()
	close(s.stop)
	s.stopped.Wait()
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "text/event-stream"
}
