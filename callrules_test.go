package toolgate_test

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

func TestNeedsApproval(t *testing.T) {
	cases := []struct {
		req  toolgate.Approval
		auto bool
		want bool
	}{
		{toolgate.ApprovalNever, false, false},
		{toolgate.ApprovalNever, true, false},
		{toolgate.ApprovalUnlessAutoApproved, false, true},
		{toolgate.ApprovalUnlessAutoApproved, true, false},
		{toolgate.ApprovalAlways, false, true},
		{toolgate.ApprovalAlways, true, true},
		{"", false, false},
	}
	for _, c := range cases {
		if got := toolgate.NeedsApproval(c.req, c.auto); got != c.want {
			t.Errorf("NeedsApproval(%q, %v) = %v", c.req, c.auto, got)
		}
	}
}

func TestCheckRateLimit(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	cases := []struct {
		name   string
		rl     *toolgate.RateLimit
		recent []time.Time
		retry  int // 0: allowed
		window string
	}{
		{"no limit", nil, []time.Time{ago(time.Second)}, 0, ""},
		{"under the minute limit", &toolgate.RateLimit{RequestsPerMinute: 2}, []time.Time{ago(10 * time.Second)}, 0, ""},
		{"old calls do not count", &toolgate.RateLimit{RequestsPerMinute: 1}, []time.Time{ago(61 * time.Second)}, 0, ""},
		// Two calls, 50 s and 20 s ago: the older leaves the window in 10 s.
		{"at the minute limit", &toolgate.RateLimit{RequestsPerMinute: 2}, []time.Time{ago(50 * time.Second), ago(20 * time.Second)}, 10, "minute"},
		// Over the limit (three in the window): the second-newest must leave, 40 s on.
		{"past the minute limit", &toolgate.RateLimit{RequestsPerMinute: 2}, []time.Time{ago(50 * time.Second), ago(20 * time.Second), ago(10 * time.Second)}, 40, "minute"},
		{"the hour decides", &toolgate.RateLimit{RequestsPerMinute: 5, RequestsPerHour: 2}, []time.Time{ago(30 * time.Minute), ago(10 * time.Minute)}, 1800, "hour"},
		{"a sub-second wait rounds up", &toolgate.RateLimit{RequestsPerMinute: 1}, []time.Time{ago(59*time.Second + 900*time.Millisecond)}, 1, "minute"},
	}
	for _, c := range cases {
		err := toolgate.CheckRateLimit("send_sms", c.rl, c.recent, now)
		if c.retry == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		te, ok := err.(*toolgate.Error)
		if !ok || te.Code != toolgate.ERateLimited || te.RetryAfterSeconds != c.retry || te.Details["window"] != c.window {
			t.Errorf("%s: %#v, want retry %d per %s", c.name, err, c.retry, c.window)
		}
	}
}
