package handlers

import (
	"math"
	"net/http"
	"net/netip"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/keyedlimit"
)

// SessionLimit bounds the sessions one client address may create with
// POST /v1/sessions: a token bucket of Burst sessions per address,
// refilled at PerSecond. Either at 0 (or less) disables it. Sessions
// created with the agent key are not counted.
type SessionLimit struct {
	PerSecond float64
	Burst     int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (see clientAddr); from any other peer the header is
	// ignored.
	TrustedProxies []netip.Prefix
}

// maxTrackedAddrs bounds the client addresses (IPv6: /64s) whose buckets
// are kept at once; past it the least recently used goes (see keyedlimit).
const maxTrackedAddrs = 16384

// limitSessionCreation returns the middleware of POST /v1/sessions that
// refuses, with 429 RATE_LIMITED and a Retry-After of the seconds until a
// session may be created again, a client address over its SessionLimit.
func limitSessionCreation(limit SessionLimit, auth Auth) func(http.Handler) http.Handler {
	buckets := keyedlimit.New(limit.PerSecond, limit.Burst, maxTrackedAddrs)
	return func(next http.Handler) http.Handler {
		if buckets == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			addr, ok := clientAddr(r, limit.TrustedProxies)
			if ok && !auth.IsAgentKey(Bearer(r, false)) {
				if allowed, wait := buckets.Take(addrKey(addr), time.Now()); !allowed {
					seconds := int(math.Ceil(wait.Seconds()))
					err := toolgate.Errorf(toolgate.ERateLimited,
						"too many sessions created from %s: at most %d at once and %g a second after that; retry in %d s",
						addr, limit.Burst, limit.PerSecond, seconds)
					err.RetryAfterSeconds = seconds
					WriteError(w, r, err.WithDetails(map[string]any{"retry_after_seconds": seconds}))
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
