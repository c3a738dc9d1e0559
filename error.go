package toolgate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Error codes of the wire protocol. Each maps to one HTTP status in the
// handlers package.
const (
	EBadRequest       = "BAD_REQUEST"
	EUnauthenticated  = "UNAUTHENTICATED"
	EPermissionDenied = "PERMISSION_DENIED"
	ENotFound         = "NOT_FOUND"
	EToolNotFound     = "TOOL_NOT_FOUND"
	EConflict         = "CONFLICT"
	ECallClosed       = "CALL_CLOSED"
	EPayloadTooLarge  = "PAYLOAD_TOO_LARGE"
	EInvalidArgs      = "INVALID_ARGS"
	ERateLimited      = "RATE_LIMITED"
	ESessionOffline   = "SESSION_OFFLINE"
	ETimeout          = "TIMEOUT"
	EInternal         = "INTERNAL_ERROR"

	// Browser-facing refusals: a POST body that is not JSON (415), and a
	// request whose Host header names a host the gateway does not serve
	// (421, against DNS rebinding).
	EUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	EMisdirectedRequest   = "MISDIRECTED_REQUEST"

	// A call of a tool whose home is unreachable right now: an imported MCP
	// server that is down and being restarted or reconnected (503). The
	// call was not stored; the same request succeeds once it is back.
	EToolOffline = "TOOL_OFFLINE"

	// Codes that only appear in a call's error, never as an HTTP error.
	ECancelled    = "CANCELLED"
	EDenied       = "DENIED"
	EAuthRequired = "AUTH_REQUIRED"
	// A call of a tool inside the gateway that was running when its
	// process (or node) stopped, and that is not run again on its own
	// because it may have had its effect already (http_request's POST).
	EInterrupted = "INTERRUPTED"
	// A call whose tool declares an output_schema (an imported MCP tool's
	// outputSchema) and whose output does not match it.
	EOutputInvalid = "OUTPUT_INVALID"

	// The runs API's answer on a gateway started without a model (503),
	// with a message that says what to set.
	EModelNotConfigured = "MODEL_NOT_CONFIGURED"

	// A write the gateway could not store because the disk holding its
	// database is full (503); nothing was changed, and the same request
	// succeeds once space is freed.
	EStorageFull = "STORAGE_FULL"

	// A request the gateway could not serve because its database cannot
	// be reached or did not answer in time (a shared PostgreSQL database
	// restarting, unreachable, or a row locked for too long) (503, with
	// Retry-After); the same request succeeds once the database is back.
	EStorageUnavailable = "STORAGE_UNAVAILABLE"

	// Codes that only appear in a failed run's error.
	EMaxSteps   = "MAX_STEPS"   // the model had not answered after max_steps turns
	EModelError = "MODEL_ERROR" // the model endpoint failed or answered nonsense
	EMaxCost    = "MAX_COST"    // the run's calls would cost, or have cost, more than its max_cost
	EMaxInput   = "MAX_INPUT"   // the run's next request would pass what a run may send its model in all
)

// Error is an error the gateway reports to a client or caller as it is.
// Any other error is internal and reported as "Internal error."
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// RetryAfterSeconds, when positive, is sent as a Retry-After header.
	RetryAfterSeconds int `json:"-"`
}

// Error implements the error interface.
func (e *Error) Error() string { return fmt.Sprintf("toolgate: %s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns e with the details added.
func (e *Error) WithDetails(details map[string]any) *Error {
	e.Details = details
	return e
}

// ErrorCode returns the code of err when it is (or wraps) an *Error, and
// INTERNAL_ERROR otherwise; nil has no code.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the message of err when it is (or wraps) an *Error,
// and "Internal error." otherwise, so internal details never leak.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}

// ErrorBody is the JSON body of every error reply.
type ErrorBody struct {
	Error struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details,omitempty"`
	} `json:"error"`
}
