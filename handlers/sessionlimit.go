package handlers

import (
	"math"
	"net/http"
	"net/netip"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/clientaddr"
	"github.com/toolgate/toolgate/internal/jsonhttp"
	"github.com/toolgate/toolgate/internal/keyedlimit"
)

// AddressLimit bounds how fast one client address may do something (create
// sessions, start runs): a token bucket of Burst per address, refilled at
// PerSecond. Either at 0 (or less) disables it.
type AddressLimit struct {
	PerSecond float64
	Burst     int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (see clientAddr); from any other peer the header is
	// ignored.
	TrustedProxies []netip.Prefix
}

// SessionLimit bounds the sessions one client address may create with
// POST /v1/sessions. Sessions created with the agent key are not counted.
type SessionLimit = AddressLimit

// maxTrackedAddrs bounds the client addresses (IPv6: /64s) whose buckets
// are kept at once; past it the least recently used goes (see keyedlimit).
const maxTrackedAddrs = 16384

// addressBuckets is an AddressLimit in force: a bucket per client address.
// A nil *addressBuckets limits nothing.
type addressBuckets struct {
	limit   AddressLimit
	buckets *keyedlimit.Buckets
	what    string // what is counted, for the error: "sessions created", "runs started"
}

func newAddressBuckets(limit AddressLimit, what string) *addressBuckets {
	buckets := keyedlimit.New(limit.PerSecond, limit.Burst, maxTrackedAddrs)
	if buckets == nil {
		return nil
	}
	return &addressBuckets{limit: limit, buckets: buckets, what: what}
}

// take takes a token from the bucket of r's client address, or returns
// the 429 RATE_LIMITED error (Retry-After: the seconds until a token is
// back) when it is empty. A request whose address cannot be read is not
// limited.
func (b *addressBuckets) take(r *http.Request) error {
	if b == nil {
		return nil
	}
	addr, ok := clientaddr.FromRequest(r, b.limit.TrustedProxies)
	if !ok {
		return nil
	}
	allowed, wait := b.buckets.Take(clientaddr.AddressKey(addr), time.Now())
	if allowed {
		return nil
	}
	seconds := int(math.Ceil(wait.Seconds()))
	err := toolgate.Errorf(toolgate.ERateLimited,
		"too many %s from %s: at most %d at once and %g a second after that; retry in %d s",
		b.what, addr, b.limit.Burst, b.limit.PerSecond, seconds)
	err.RetryAfterSeconds = seconds
	return err.WithDetails(map[string]any{"retry_after_seconds": seconds})
}

// limitSessionCreation returns the middleware of POST /v1/sessions that
// refuses, with 429 RATE_LIMITED and a Retry-After of the seconds until a
// session may be created again, a client address over its SessionLimit.
func limitSessionCreation(limit SessionLimit, auth Auth) func(http.Handler) http.Handler {
	buckets := newAddressBuckets(limit, "sessions created")
	return func(next http.Handler) http.Handler {
		if buckets == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !auth.IsAgentKey(jsonhttp.Bearer(r, false)) {
				if err := buckets.take(r); err != nil {
					jsonhttp.WriteError(w, r, err)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
