package toolgate_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestHooksFirstDenialWins: the hooks run in the order added and stop at
// the first denial; a plain error becomes PERMISSION_DENIED naming the
// tool, a hook's own *Error comes back as it is.
func TestHooksFirstDenialWins(t *testing.T) {
	var h toolgate.Hooks
	if err := h.CheckCall(context.Background(), toolgate.CallCheck{Tool: "t"}); err != nil {
		t.Fatalf("the empty chain denied: %v", err)
	}
	var ran []string
	h.OnBeforeCall(func(_ context.Context, c toolgate.CallCheck) error {
		ran = append(ran, "first")
		if c.Tool == "secret" {
			return errors.New("not today")
		}
		return nil
	})
	h.OnBeforeCall(func(_ context.Context, c toolgate.CallCheck) error {
		ran = append(ran, "second")
		if c.Tool == "busy" {
			return toolgate.Errorf(toolgate.ERateLimited, "later")
		}
		return nil
	})

	err := h.CheckCall(context.Background(), toolgate.CallCheck{Tool: "secret"})
	if toolgate.ErrorCode(err) != toolgate.EPermissionDenied || toolgate.ErrorMessage(err) != "the call to secret was denied: not today" {
		t.Errorf("denial %v (%s)", err, toolgate.ErrorCode(err))
	}
	if len(ran) != 1 {
		t.Errorf("hooks after the denial ran: %v", ran)
	}
	ran = nil
	err = h.CheckCall(context.Background(), toolgate.CallCheck{Tool: "busy"})
	if toolgate.ErrorCode(err) != toolgate.ERateLimited || toolgate.ErrorMessage(err) != "later" {
		t.Errorf("a hook's own error came back as %v (%s)", err, toolgate.ErrorCode(err))
	}
	if len(ran) != 2 || ran[0] != "first" {
		t.Errorf("hooks ran %v, want first then second", ran)
	}
}

// TestToolNamePolicy: a registration rule refuses a name its pattern does
// not match, with PERMISSION_DENIED, and lets others through.
func TestToolNamePolicy(t *testing.T) {
	var h toolgate.Hooks
	h.OnBeforeRegister(toolgate.ToolNamePolicy(regexp.MustCompile(`^app_`)))
	if err := h.CheckRegistration("S1", toolgate.ToolSpec{Name: "app_ok"}); err != nil {
		t.Errorf("app_ok refused: %v", err)
	}
	err := h.CheckRegistration("S1", toolgate.ToolSpec{Name: "other"})
	if toolgate.ErrorCode(err) != toolgate.EPermissionDenied {
		t.Errorf("other: %v, want PERMISSION_DENIED", err)
	}
}
