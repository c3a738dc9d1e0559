package toolgate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ToolSpecChecks are a gateway's own checks of a tool being registered,
// which CheckToolSpec runs in their place among the protocol's rules. A
// client SDK, which knows neither, leaves both nil.
type ToolSpecChecks struct {
	// Admit decides whether a tool of this (well-formed) name may be
	// registered here: a gateway refuses a name one of its built-in tools
	// has, or one outside its name policy. Its error is returned as it is.
	Admit func(spec ToolSpec) error
	// Timeout checks a timeout_ms that is set against the gateway's
	// bounds; its error's message is returned after "timeout_ms: ".
	// Without it, only a negative timeout_ms is refused.
	Timeout func(ms int64) error
}

// CheckToolSpec checks a tool as a client registers it against the
// protocol's rules and returns the first one it breaks, as an *Error with
// BAD_REQUEST (unless checks.Admit gave another code), in this order: the
// name has the shape of ToolNamePattern; checks.Admit; the description is
// not blank and at most MaxDescriptionLength characters; timeout_ms, when
// set; requires_approval is empty or a known requirement; no rate_limit
// value is negative; parameters, when given, passes CheckToolParameters.
// The gateway and the Go SDK both check with it, so a tool the SDK accepts
// is refused by the gateway only for the gateway's own checks (and a
// parameters schema that does not compile).
func CheckToolSpec(spec ToolSpec, checks ToolSpecChecks) error {
	if !ToolNamePattern.MatchString(spec.Name) {
		return Errorf(EBadRequest, "name must match %s", ToolNamePattern)
	}
	if checks.Admit != nil {
		if err := checks.Admit(spec); err != nil {
			return err
		}
	}
	if strings.TrimSpace(spec.Description) == "" {
		return Errorf(EBadRequest, "description is required")
	}
	if n := len([]rune(spec.Description)); n > MaxDescriptionLength {
		return Errorf(EBadRequest, "description is %d characters; the limit is %d", n, MaxDescriptionLength)
	}
	if spec.TimeoutMS != 0 {
		if checks.Timeout != nil {
			if err := checks.Timeout(spec.TimeoutMS); err != nil {
				return Errorf(EBadRequest, "timeout_ms: %s", ErrorMessage(err))
			}
		} else if spec.TimeoutMS < 0 {
			return Errorf(EBadRequest, "timeout_ms must not be negative")
		}
	}
	if spec.RequiresApproval != "" && !spec.RequiresApproval.Valid() {
		return Errorf(EBadRequest, "requires_approval must be never, unless_auto_approved or always")
	}
	if rl := spec.RateLimit; rl != nil && (rl.RequestsPerMinute < 0 || rl.RequestsPerHour < 0) {
		return Errorf(EBadRequest, "rate_limit values must not be negative")
	}
	if len(spec.Parameters) == 0 || string(spec.Parameters) == "null" {
		return nil // the default, {"type": "object"}
	}
	return CheckToolParameters(spec.Parameters)
}

// CheckToolParameters checks that a tool's parameters is one JSON object
// with the top-level "type": "object", as the protocol asks of every tool
// schema. It returns BAD_REQUEST otherwise. Whether the object is a valid
// JSON Schema is for the gateway's schema compiler to tell.
func CheckToolParameters(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	err := dec.Decode(&doc)
	if err == nil {
		if _, next := dec.Token(); next != io.EOF {
			err = fmt.Errorf("invalid character after top-level value")
		}
	}
	if err != nil {
		return Errorf(EBadRequest, "parameters is not JSON: %v", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return Errorf(EBadRequest, "parameters must be a JSON Schema object")
	}
	if obj["type"] != "object" {
		return Errorf(EBadRequest, `parameters must have the top-level "type": "object"`)
	}
	return nil
}
