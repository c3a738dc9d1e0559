package handlers

import (
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// Probes are bounded: one per session, and a limit in the gateway past
// which a probe is refused 429 with a Retry-After, until one ends.
func TestProbesAreBounded(t *testing.T) {
	h := newProbeHandler(time.Second)
	h.limit = 2
	for _, sid := range []string{"a", "b"} {
		if err := h.begin(sid); err != nil {
			t.Fatalf("probe %s: %v", sid, err)
		}
	}
	if err := h.begin("a"); toolgate.ErrorCode(err) != toolgate.EConflict {
		t.Fatalf("a second probe of a: %v, want CONFLICT", err)
	}
	err := h.begin("c")
	var te *toolgate.Error
	if !errors.As(err, &te) || te.Code != toolgate.ERateLimited || te.RetryAfterSeconds != 1 {
		t.Fatalf("a probe past the limit: %v, want RATE_LIMITED with Retry-After 1", err)
	}
	h.done("a")
	if err := h.begin("c"); err != nil {
		t.Fatalf("a probe once one ended: %v", err)
	}
	if len(h.active) != 2 {
		t.Fatalf("%d probes held, want 2", len(h.active))
	}
}
