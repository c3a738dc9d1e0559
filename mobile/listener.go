package mobile

import "log/slog"

// Connection states a ConnectionListener is told of.
const (
	// StateIdle: Connect has not been called yet.
	StateIdle = "idle"
	// StateConnecting: the session is being created or resumed.
	StateConnecting = "connecting"
	// StateConnected: calls are being received (detail says "sse" or "poll").
	StateConnected = "connected"
	// StateReconnecting: the connection was lost; the client is retrying
	// (detail says why).
	StateReconnecting = "reconnecting"
	// StateClosed: Close was called.
	StateClosed = "closed"
)

// Transport modes for Client.SetTransport.
const (
	// TransportAuto streams over SSE and falls back to long-poll when a
	// proxy holds the stream back (no ready in time, or only with the
	// stream's end), probing the stream now and then to go back to it.
	TransportAuto = "auto"
	// TransportSSE only streams.
	TransportSSE = "sse"
	// TransportPoll only long-polls.
	TransportPoll = "poll"
)

// ConnectionListener is told when the connection state changes. It is
// called from the client's connection goroutine and should return quickly.
type ConnectionListener interface {
	OnStateChange(state, detail string)
}

// Log levels passed to a Logger.
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// Logger receives the client's and the bridge's log lines. Without one they
// go to the standard library's default slog logger.
type Logger interface {
	Log(level, message string)
}

// slogLogger writes to slog.Default.
type slogLogger struct{}

// Log writes the line at the matching slog level.
func (slogLogger) Log(level, message string) {
	switch level {
	case LevelDebug:
		slog.Debug(message, "component", "toolgate/mobile")
	case LevelWarn:
		slog.Warn(message, "component", "toolgate/mobile")
	case LevelError:
		slog.Error(message, "component", "toolgate/mobile")
	default:
		slog.Info(message, "component", "toolgate/mobile")
	}
}
