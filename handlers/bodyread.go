package handlers

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// defaultBodyReadTimeout is Options.BodyReadTimeout when unset.
const defaultBodyReadTimeout = 10 * time.Second

// readBodyWithin reads a request's whole body (within MaxBodyBytes: it
// runs after limitBody) before the route sees it, under a read deadline
// of BodyReadTimeout, then lifts the deadline and hands the route the
// bytes. A client that trickles its body in is cut off after seconds, not
// after minutes; a stream or a held poll, whose body (if any) has been
// read by then, keeps its long life. The server's ReadHeaderTimeout bounds
// the headers before it. A request without a body (GET) passes untouched.
//
// The deadline is set through http.ResponseController, which reaches the
// connection over HTTP/1.1 and the request's stream over HTTP/2; where it
// cannot be set (a recorder in a test), the body is read without one.
func (a *API) readBodyWithin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		bounded := rc.SetReadDeadline(time.Now().Add(a.opts.BodyReadTimeout)) == nil
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				err = toolgate.Errorf(toolgate.EPayloadTooLarge, "the request body is larger than the limit of %d bytes", tooLarge.Limit)
			case errors.Is(err, os.ErrDeadlineExceeded):
				err = toolgate.Errorf(toolgate.EBadRequest, "the request body did not arrive within %s", a.opts.BodyReadTimeout)
			default:
				err = toolgate.Errorf(toolgate.EBadRequest, "could not read the request body: %v", err)
			}
			// What is left of the body is not read: the connection ends.
			w.Header().Set("Connection", "close")
			jsonhttp.WriteError(w, r, err)
			// The deadline is not lifted but brought to now: after the
			// handler net/http reads what is left of a short body before
			// it closes the connection, and without a deadline a client
			// trickling bytes would hold the connection (and its place
			// under --max-connections) for as long as it trickles.
			if bounded {
				_ = rc.SetReadDeadline(time.Now())
			}
			return
		}
		if bounded {
			_ = rc.SetReadDeadline(time.Time{})
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}
