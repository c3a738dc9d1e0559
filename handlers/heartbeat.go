package handlers

import (
	"strconv"
	"time"

	"github.com/toolgate/toolgate"
)

// defaultMinHeartbeat is Options.MinHeartbeat when unset.
const defaultMinHeartbeat = time.Second

// heartbeatRange is the ping intervals a stream may ask for with
// heartbeat_ms: a client behind a proxy that cuts idle connections sooner
// than the gateway's heartbeat asks for a shorter one. The gateway's
// heartbeat is both the default and the most; min keeps a client from
// making the gateway ping it continuously.
type heartbeatRange struct{ min, max time.Duration }

// newHeartbeatRange returns the range [min, max], min defaulting to
// defaultMinHeartbeat and never above max.
func newHeartbeatRange(lo, hi time.Duration) heartbeatRange {
	if lo <= 0 {
		lo = defaultMinHeartbeat
	}
	return heartbeatRange{min: min(lo, hi), max: hi}
}

// parse returns the interval asked by text, a whole number of
// milliseconds clamped into the range (a number too large for any
// duration is the most); given false, the default. Anything else (a sign,
// a fraction, an exponent, quotes, an empty value) is a 400.
func (h heartbeatRange) parse(text string, given bool) (time.Duration, error) {
	if !given {
		return h.max, nil
	}
	bad := text == ""
	for _, c := range []byte(text) {
		if c < '0' || c > '9' {
			bad = true
			break
		}
	}
	if bad {
		return 0, toolgate.Errorf(toolgate.EBadRequest, "heartbeat_ms must be a whole number of milliseconds, not %.40q", text)
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n > int64(h.max/time.Millisecond) {
		return h.max, nil // only digits: too large for an int64 at worst
	}
	return max(time.Duration(n)*time.Millisecond, h.min), nil
}
