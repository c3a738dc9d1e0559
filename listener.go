package toolgate

import "time"

// Listener is one open stream or held poll of a session: the engine hands
// it out when a client listens, the HTTP layer holds it while it writes
// the session's events, and neither imports the other for it.
type Listener interface {
	// Wake receives a signal whenever the session's event log has grown.
	Wake() <-chan struct{}
	// Done is closed when the session has closed or expired (and at
	// shutdown).
	Done() <-chan struct{}
	// EndReason is why the stream or poll ended: EndReplaced once a newer
	// stream or poll of the session took its place (the engine then
	// signals Wake, or notify, a last time; Done stays open); once Done
	// is closed, "closed" or "expired", or "" when the session did not
	// end (the gateway is shutting down). "" while it goes on.
	EndReason() string
	// Close ends the stream or poll; the session's presence is updated.
	Close()
	// Cut is Close for a stream or poll whose connection broke (the
	// client, or a proxy on the way, went away) rather than being ended
	// by the gateway or by the client's leave: the session's connection
	// record counts it (GET /v1/sessions/{sid}, "connection").
	Cut()
}

// The transports a client holds a session by (Via.Transport), as the
// session's connection record names them.
const (
	TransportStream      = "stream"       // GET /v1/sessions/{sid}/events
	TransportMultiStream = "multi_stream" // POST /v1/streams
	TransportPoll        = "poll"         // GET /v1/sessions/{sid}/poll
	TransportMultiPoll   = "multi_poll"   // POST /v1/poll
)

// Via says how a listener's client holds its session: the transport and,
// for a stream, the ping interval in use.
type Via struct {
	Transport string
	Heartbeat time.Duration // of a stream; 0 for a poll
}

// Streaming reports whether the transport is a stream (else a held poll).
func (v Via) Streaming() bool {
	return v.Transport == TransportStream || v.Transport == TransportMultiStream
}

// EndReplaced is the EndReason of a stream or poll that a newer one of
// the same session replaced: a session holds a few at most
// (--max-streams-per-session), and the oldest gives way.
const EndReplaced = "replaced"
