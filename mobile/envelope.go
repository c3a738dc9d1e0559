package mobile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CETPVersion is the version of the external tool protocol the bridge
// speaks (the provider's com.clawseed.tools.version meta-data).
const CETPVersion = "1"

// cetpCodes are the error codes of CETP v1; each reaches the caller as the
// tool_error code of the same name.
var cetpCodes = map[string]bool{
	CodeAuthRequired: true, CodePermissionDenied: true, CodeToolNotFound: true,
	CodeInvalidArgs: true, CodeRateLimited: true, CodeInternalError: true,
}

// envelope is a provider's reply: {"status":"success","data":...} or
// {"status":"error","error_code":...,"error_message":...,
// "resolution_hint"?,"authorize_intent"?}.
type envelope struct {
	Status          string          `json:"status"`
	Data            json.RawMessage `json:"data"`
	ErrorCode       string          `json:"error_code"`
	ErrorMessage    string          `json:"error_message"`
	ResolutionHint  string          `json:"resolution_hint"`
	AuthorizeIntent string          `json:"authorize_intent"`
}

// parseEnvelope reads a provider's reply. It returns the data of a
// success, or a *ToolError for an error envelope or a malformed reply.
func parseEnvelope(reply string) (json.RawMessage, *ToolError) {
	var env envelope
	if err := json.Unmarshal([]byte(reply), &env); err != nil {
		return nil, &ToolError{Code: CodeInternalError, Message: "the provider's reply is not a JSON envelope: " + err.Error()}
	}
	switch env.Status {
	case "success":
		return envelopeData(env.Data), nil
	case "error":
		return nil, envelopeError(env)
	default:
		return nil, &ToolError{Code: CodeInternalError, Message: fmt.Sprintf("the provider's reply has status %q, not success or error", env.Status)}
	}
}

// envelopeData unwraps data: CETP sends it as a JSON string holding JSON,
// which is decoded; a string that is not JSON stays a string; any other
// JSON value is taken as it is.
func envelopeData(data json.RawMessage) json.RawMessage {
	if len(data) == 0 {
		return json.RawMessage("null")
	}
	var s string
	if json.Unmarshal(data, &s) == nil {
		if trimmed := strings.TrimSpace(s); trimmed != "" && json.Valid([]byte(trimmed)) {
			return json.RawMessage(trimmed)
		}
	}
	return data
}

// envelopeError maps an error envelope to a tool error: a CETP code is
// kept, any other becomes INTERNAL_ERROR with the original in the details;
// resolution_hint and authorize_intent travel in the details.
func envelopeError(env envelope) *ToolError {
	details := map[string]string{}
	code := env.ErrorCode
	if !cetpCodes[code] {
		if code != "" {
			details["provider_error_code"] = code
		}
		code = CodeInternalError
	}
	if env.ResolutionHint != "" {
		details["resolution_hint"] = env.ResolutionHint
	}
	if env.AuthorizeIntent != "" {
		details["authorize_intent"] = env.AuthorizeIntent
	}
	message := env.ErrorMessage
	if message == "" {
		message = "the provider reported " + env.ErrorCode
	}
	te := &ToolError{Code: code, Message: message}
	if len(details) > 0 {
		b, _ := json.Marshal(details)
		te.DetailsJSON = string(b)
	}
	return te
}

// providerTool is one tool of a list_tools reply.
type providerTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// parseToolList reads a list_tools reply.
func parseToolList(reply string) ([]providerTool, error) {
	data, te := parseEnvelope(reply)
	if te != nil {
		return nil, te
	}
	var list struct {
		Tools []providerTool `json:"tools"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("list_tools data is not {\"tools\": [...]}: %w", err)
	}
	if list.Tools == nil {
		return nil, errors.New(`list_tools data has no "tools" array`)
	}
	return list.Tools, nil
}
