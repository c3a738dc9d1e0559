package mobile

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate"
)

// Tool error codes a handler may report. They are the CETP codes the wire
// protocol reuses for tool-level errors.
const (
	CodeAuthRequired     = toolgate.EAuthRequired
	CodePermissionDenied = toolgate.EPermissionDenied
	CodeToolNotFound     = toolgate.EToolNotFound
	CodeInvalidArgs      = toolgate.EInvalidArgs
	CodeRateLimited      = toolgate.ERateLimited
	CodeInternalError    = toolgate.EInternal
)

// ToolError is a tool-level failure with a code, a message for the caller
// and optional details (a JSON object). A Go handler returns one as its
// error; a handler in another language calls Call.Fail instead.
type ToolError struct {
	Code        string
	Message     string
	DetailsJSON string
}

// NewToolError returns a ToolError. detailsJSON may be empty; otherwise it
// must be a JSON object.
func NewToolError(code, message, detailsJSON string) *ToolError {
	return &ToolError{Code: code, Message: message, DetailsJSON: detailsJSON}
}

// Error implements the error interface.
func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// details returns the details as raw JSON, or nil when they are empty or
// not a JSON object.
func (e *ToolError) details() json.RawMessage {
	if e.DetailsJSON == "" {
		return nil
	}
	var obj map[string]any
	if json.Unmarshal([]byte(e.DetailsJSON), &obj) != nil {
		return nil
	}
	return json.RawMessage(e.DetailsJSON)
}

// asToolError turns any handler error into a ToolError: a ToolError (or an
// error wrapping one) keeps its code; anything else is INTERNAL_ERROR with
// the error's text as the message.
func asToolError(err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		if te.Code == "" {
			return &ToolError{Code: CodeInternalError, Message: te.Message, DetailsJSON: te.DetailsJSON}
		}
		return te
	}
	return &ToolError{Code: CodeInternalError, Message: err.Error()}
}

// APIError is an error reply of the gateway: its HTTP status and the code
// and message of its error body.
type APIError struct {
	Status  int
	Code    string
	Message string
	// retryAfter is the wait a 429 or 503 reply asked for (Retry-After),
	// zero when none.
	retryAfter time.Duration
}

// Error implements the error interface.
func (e *APIError) Error() string {
	return fmt.Sprintf("toolgate gateway: %d %s: %s", e.Status, e.Code, e.Message)
}

// RetryAfterMS is the wait, in milliseconds, that a 429 or 503 reply
// asked for with Retry-After; 0 when it asked none.
func (e *APIError) RetryAfterMS() int64 { return e.retryAfter.Milliseconds() }

// sessionLost reports whether the gateway no longer accepts the session:
// its token is refused or the session is unknown.
func (e *APIError) sessionLost() bool {
	return e.Status == 401 || e.Status == 403 || e.Status == 404 || e.Status == 410
}
