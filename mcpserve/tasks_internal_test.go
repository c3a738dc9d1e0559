package mcpserve

import (
	"encoding/json"
	"testing"
	"time"
)

// The ttl a host asks for is read strictly and bounded: a string, a
// fraction or a negative number is refused; a huge number (beyond int64,
// or written with an exponent) is the maximum; a tiny one the minimum.
func TestTaskTTLIsReadStrictlyAndBounded(t *testing.T) {
	e := &Endpoint{opts: Options{MaxTaskTTL: 2 * time.Hour}}
	e.tasks = &taskServer{ep: e}
	for _, tc := range []struct {
		raw  string
		ok   bool
		want time.Duration
	}{
		{"", true, 2 * time.Hour},
		{"null", true, 2 * time.Hour},
		{"60000", true, time.Minute},
		{"6e4", true, time.Minute},
		{"0", true, minTaskTTL},
		{"1e300", true, 2 * time.Hour},
		{"99999999999999999999999", true, 2 * time.Hour},
		{"9223372036854775807", true, 2 * time.Hour},
		{`"60000"`, false, 0},
		{"1.5", false, 0},
		{"-1", false, 0},
		{"true", false, 0},
		{"{}", false, 0},
	} {
		asked, ok := askedTTL(json.RawMessage(tc.raw))
		if ok != tc.ok {
			t.Errorf("ttl %s: ok = %v, want %v", tc.raw, ok, tc.ok)
			continue
		}
		if ok {
			if got := e.tasks.taskTTL(asked); got != tc.want {
				t.Errorf("ttl %s: granted %v, want %v", tc.raw, got, tc.want)
			}
		}
	}
}
