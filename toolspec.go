package toolgate

import (
	"bytes"
	"encoding/json"
	"math"
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
// not blank, at most MaxDescriptionLength characters and plain text
// (CheckPlainText: no NUL, which PostgreSQL's text refuses); timeout_ms, when
// set; requires_approval is empty or a known requirement; no rate_limit
// value is negative; estimated_cost passes CheckCost; estimated_duration_ms
// is from 0 to MaxEstimatedDurationMS; parameters, when given, passes CheckToolParameters.
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
	if err := CheckPlainText(spec.Description); err != nil {
		return Errorf(EBadRequest, "description %v", err)
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
	if err := CheckCost("estimated_cost", spec.EstimatedCost); err != nil {
		return err
	}
	if spec.EstimatedDurationMS < 0 || spec.EstimatedDurationMS > MaxEstimatedDurationMS {
		return Errorf(EBadRequest, "estimated_duration_ms must be between 0 and %d", int64(MaxEstimatedDurationMS))
	}
	if err := CheckToolPresentation(spec.Presentation()); err != nil {
		return err
	}
	if len(spec.Parameters) == 0 || string(spec.Parameters) == "null" {
		return nil // the default, {"type": "object"}
	}
	return CheckToolParameters(spec.Parameters)
}

// MaxCost is the largest cost a tool may estimate or an answer report, and
// the largest max_cost of a run; MaxEstimatedDurationMS the longest
// duration a tool may estimate (a day).
const (
	MaxCost                = 1e12
	MaxEstimatedDurationMS = 24 * 60 * 60 * 1000
)

// CheckCost checks a cost named field (an estimate, a reported cost or a
// budget): a finite number from 0 to MaxCost, else BAD_REQUEST.
func CheckCost(field string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > MaxCost {
		return Errorf(EBadRequest, "%s must be a number from 0 to %g", field, float64(MaxCost))
	}
	return nil
}

// The limits of a tool's parameters schema, checked before it is
// compiled: a schema's compile time grows faster than its nesting (one
// nested 1,000 levels deep took seconds), and these bounds keep the
// slowest schema that passes them to milliseconds (BENCHMARKS.md, "Tool
// schemas: the limits and their worst case"). Real tool schemas are far
// inside them.
const (
	// MaxParametersBytes is the size of a parameters schema, in bytes as
	// sent (white space included).
	MaxParametersBytes = 64 << 10
	// MaxParametersDepth is how deeply objects and arrays nest in a
	// parameters schema, the top-level object being 1.
	MaxParametersDepth = 64
	// MaxParametersNodes is the number of objects and arrays in a
	// parameters schema.
	MaxParametersNodes = 1024
)

// CheckToolParameters checks that a tool's parameters is one JSON object
// with the top-level "type": "object", as the protocol asks of every tool
// schema, within MaxParametersBytes, MaxParametersDepth and
// MaxParametersNodes, and read alike by every reader (CheckStrictJSON's
// rules: valid UTF-8, no member named twice), with every $ref inside it,
// within MaxSchemaEvaluations for one path of args and within
// MaxPatternLength and MaxPatternBytes (checkSchemaCost). It returns
// BAD_REQUEST otherwise. Its cost is a pass over the bytes (the size
// checked first) and a count over the schema's graph bounded to
// milliseconds, so it can run before anything is compiled. Whether the
// object is a valid JSON Schema, and whether its regular expressions'
// programs fit the gateway's bounds, is for the gateway's schema compiler
// to tell.
func CheckToolParameters(raw json.RawMessage) error {
	return checkObjectSchema("parameters", raw)
}

// checkObjectSchema is CheckToolParameters of a schema named field in its
// errors.
func checkObjectSchema(field string, raw json.RawMessage) error {
	if len(raw) > MaxParametersBytes {
		return Errorf(EBadRequest, "%s is %d bytes; the limit is %d", field, len(raw), MaxParametersBytes)
	}
	if err := checkJSONText(raw, MaxParametersDepth, MaxParametersNodes); err != nil {
		return Errorf(EBadRequest, "%s %s", field, err)
	}
	var top map[string]json.RawMessage
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(raw, &top) != nil {
		return Errorf(EBadRequest, "%s must be a JSON Schema object", field)
	}
	var typ string
	if json.Unmarshal(top["type"], &typ) != nil || typ != "object" {
		return Errorf(EBadRequest, `%s must have the top-level "type": "object"`, field)
	}
	if err := checkSchemaCost(raw); err != nil {
		return Errorf(EBadRequest, "%s %s", field, err)
	}
	return nil
}
