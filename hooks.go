package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sync"
)

// CallCheck is what a before-call hook is shown of a call about to be
// stored: every call passes the chain, from a run or from POST /v1/calls.
type CallCheck struct {
	RunID     string // empty outside a run
	SessionID string // empty for a built-in tool
	Tool      string
	Args      json.RawMessage
	Source    ToolSource
}

// BeforeCall is a hook run before a call is stored. A non-nil error denies
// the call: its message is the reason the caller (or the model) is given.
type BeforeCall func(ctx context.Context, c CallCheck) error

// BeforeRegister is a rule run for each tool a client registers. A non-nil
// error rejects that tool with the error's message.
type BeforeRegister func(sessionID string, spec ToolSpec) error

// Hooks is the chain of before-call hooks and registration rules. The
// gateway adds its own (the tool-name policy); an embedder adds more with
// OnBeforeCall and OnBeforeRegister. Hooks run in the order added and the
// first denial wins. The zero value is an empty chain ready to use.
type Hooks struct {
	mu       sync.RWMutex
	calls    []BeforeCall
	registry []BeforeRegister
}

// OnBeforeCall adds a hook every call passes before it is stored.
func (h *Hooks) OnBeforeCall(fn BeforeCall) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fn)
}

// OnBeforeRegister adds a rule every registered tool passes.
func (h *Hooks) OnBeforeRegister(fn BeforeRegister) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.registry = append(h.registry, fn)
}

// CheckCall runs the before-call hooks. A denial comes back as a *Error:
// the hook's own when it returned one, else PERMISSION_DENIED with the
// hook's reason.
func (h *Hooks) CheckCall(ctx context.Context, c CallCheck) error {
	h.mu.RLock()
	hooks := h.calls
	h.mu.RUnlock()
	for _, fn := range hooks {
		if err := fn(ctx, c); err != nil {
			return denial(err, "the call to "+c.Tool+" was denied: ")
		}
	}
	return nil
}

// CheckRegistration runs the registration rules for one tool.
func (h *Hooks) CheckRegistration(sessionID string, spec ToolSpec) error {
	h.mu.RLock()
	rules := h.registry
	h.mu.RUnlock()
	for _, fn := range rules {
		if err := fn(sessionID, spec); err != nil {
			return denial(err, "")
		}
	}
	return nil
}

// denial is a hook's error as the caller is given it: its own *Error, or
// PERMISSION_DENIED with prefix and its message.
func denial(err error, prefix string) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return Errorf(EPermissionDenied, "%s%s", prefix, err.Error())
}

// ToolNamePolicy is the registration rule behind --tool-name-pattern: every
// registered tool name must also match re.
func ToolNamePolicy(re *regexp.Regexp) BeforeRegister {
	return func(_ string, spec ToolSpec) error {
		if !re.MatchString(spec.Name) {
			return Errorf(EPermissionDenied, "name is not allowed by this gateway's tool-name policy %s", re)
		}
		return nil
	}
}
