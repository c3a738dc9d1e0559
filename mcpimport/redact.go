package mcpimport

import (
	"encoding/json"
	"errors"

	"github.com/toolgate/toolgate"
)

// redactText passes text the server sent through Options.Redact.
func (s *Server) redactText(text string) string {
	if s.opts.Redact == nil || text == "" {
		return text
	}
	raw, err := json.Marshal(text)
	if err != nil {
		return text
	}
	var out string
	if json.Unmarshal(s.opts.Redact(raw), &out) != nil {
		return "(a message that could not be redacted)"
	}
	return out
}

// redactError returns err with its message and details passed through
// Options.Redact: a call's error holds what the server answered (its
// JSON-RPC error, its isError content, why it went away), which reaches
// the caller, the run's events and the call's record.
func (s *Server) redactError(err error) error {
	var te *toolgate.Error
	if s.opts.Redact == nil || !errors.As(err, &te) {
		return err
	}
	out := *te
	out.Message = s.redactText(te.Message)
	if len(te.Details) > 0 {
		out.Details = nil
		raw, merr := json.Marshal(te.Details)
		if merr != nil || json.Unmarshal(s.opts.Redact(raw), &out.Details) != nil {
			out.Details = map[string]any{"server": s.cfg.Name}
		}
	}
	return &out
}
