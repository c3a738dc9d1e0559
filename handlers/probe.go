package handlers

import (
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// probeGap is the time between a probe's two events. A path that streams
// hands the first over at once; one that buffers hands both over together
// when the probe ends.
const probeGap = 500 * time.Millisecond

// maxProbes bounds the probes in progress on the gateway; each holds a
// request for probeGap.
const maxProbes = 1024

// probeHandler serves GET /v1/sessions/{sid}/probe: a short stream that
// lets a client on the long-poll learn whether its path now passes a
// stream as it comes, without giving up its poll. The probe is not a
// connection: it listens to nothing, delivers nothing and changes no
// presence.
type probeHandler struct {
	writeTimeout time.Duration
	gap          time.Duration
	limit        int // probes at once in the gateway

	mu     sync.Mutex
	active map[string]struct{} // the sessions probing now
}

func newProbeHandler(writeTimeout time.Duration) *probeHandler {
	return &probeHandler{writeTimeout: writeTimeout, gap: probeGap, limit: maxProbes, active: map[string]struct{}{}}
}

// begin takes session sid's one probe place; it refuses a second probe of
// the session (409) and one past the limit (429, retry in a second).
func (h *probeHandler) begin(sid string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, busy := h.active[sid]; busy {
		return toolgate.Errorf(toolgate.EConflict, "session %s is probing already; one probe at a time", sid)
	}
	if len(h.active) >= h.limit {
		err := toolgate.Errorf(toolgate.ERateLimited, "the gateway runs its limit of %d probes; try again", h.limit)
		err.RetryAfterSeconds = 1
		return err
	}
	h.active[sid] = struct{}{}
	return nil
}

func (h *probeHandler) done(sid string) {
	h.mu.Lock()
	delete(h.active, sid)
	h.mu.Unlock()
}

// handleProbe writes the stream's headers, a ready event at once, a probe
// event probeGap later, and ends.
func (h *probeHandler) handleProbe(w http.ResponseWriter, r *http.Request) {
	sid := chi.URLParam(r, "sid")
	if err := h.begin(sid); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	defer h.done(sid)
	out := startStream(w, h.writeTimeout)
	if out.write([]byte("event: ready\ndata: {\"type\":\"probe\",\"step\":1}\n\n")) != nil {
		return
	}
	t := time.NewTimer(h.gap)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return
	case <-t.C:
	}
	out.write([]byte("event: probe\ndata: {\"type\":\"probe\",\"step\":2}\n\n"))
}
