package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/toolgate/toolgate"
)

// Memory and scratch-space limits of one call, in MiB. A NAME.json may set
// its own (memory_limit_mb, scratch_limit_mb) up to the maximum.
const (
	DefaultMemoryLimitMB  = 64
	MaxMemoryLimitMB      = 1024
	DefaultScratchLimitMB = 64
	MaxScratchLimitMB     = 1024
)

// maxSpecFileBytes bounds NAME.json: a tool's description and parameters
// are far smaller (toolgate.MaxParametersBytes).
const maxSpecFileBytes = 1 << 20

// specFile is NAME.json: the fields a client registers a tool with (its
// name is the file's), then the sandbox's own settings.
type specFile struct {
	Description          string              `json:"description"`
	Parameters           json.RawMessage     `json:"parameters"`
	TimeoutMS            int64               `json:"timeout_ms"`
	RequiresApproval     toolgate.Approval   `json:"requires_approval"`
	RateLimit            *toolgate.RateLimit `json:"rate_limit"`
	ReadOnly             bool                `json:"read_only"`
	EstimatedCost        float64             `json:"estimated_cost"`
	EstimatedDurationMS  int64               `json:"estimated_duration_ms"`
	RequiresSanitization *bool               `json:"requires_sanitization"`

	// MemoryLimitMB caps the module's linear memory (default
	// DefaultMemoryLimitMB, at most MaxMemoryLimitMB).
	MemoryLimitMB int64 `json:"memory_limit_mb"`
	// ScratchLimitMB caps what one call may write to its scratch directory
	// (default DefaultScratchLimitMB, at most MaxScratchLimitMB).
	ScratchLimitMB int64 `json:"scratch_limit_mb"`
}

// toolConfig is a checked NAME.json: the tool's spec as the gateway lists
// it and the limits its calls run under.
type toolConfig struct {
	spec         toolgate.ToolSpec
	memoryBytes  uint64
	scratchBytes int64
}

// parseSpecFile reads NAME.json strictly (one JSON object, no unknown
// field, no member twice) and checks it as a client's registration is
// checked (toolgate.CheckToolSpec), with name taken from the file name.
// Its error says what is wrong, for the log.
func parseSpecFile(name string, raw []byte) (toolConfig, error) {
	if len(raw) > maxSpecFileBytes {
		return toolConfig{}, fmt.Errorf("%s.json is %d bytes; the limit is %d", name, len(raw), maxSpecFileBytes)
	}
	if err := toolgate.CheckStrictJSON(raw); err != nil {
		return toolConfig{}, fmt.Errorf("%s.json: %v", name, err)
	}
	var f specFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return toolConfig{}, fmt.Errorf("%s.json: %v", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return toolConfig{}, fmt.Errorf("%s.json: more than one JSON value", name)
	}
	if len(f.Parameters) == 0 || string(f.Parameters) == "null" {
		f.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	spec := toolgate.ToolSpec{
		Name:                 name,
		Description:          f.Description,
		Parameters:           f.Parameters,
		TimeoutMS:            f.TimeoutMS,
		RequiresApproval:     f.RequiresApproval,
		RateLimit:            f.RateLimit,
		ReadOnly:             f.ReadOnly,
		EstimatedCost:        f.EstimatedCost,
		EstimatedDurationMS:  f.EstimatedDurationMS,
		RequiresSanitization: f.RequiresSanitization,
	}
	if spec.RequiresApproval == "" {
		spec.RequiresApproval = toolgate.ApprovalNever
	}
	if err := toolgate.CheckToolSpec(spec, toolgate.ToolSpecChecks{}); err != nil {
		return toolConfig{}, fmt.Errorf("%s.json: %s", name, toolgate.ErrorMessage(err))
	}
	memoryMB, err := limitMB("memory_limit_mb", f.MemoryLimitMB, DefaultMemoryLimitMB, MaxMemoryLimitMB)
	if err != nil {
		return toolConfig{}, fmt.Errorf("%s.json: %v", name, err)
	}
	scratchMB, err := limitMB("scratch_limit_mb", f.ScratchLimitMB, DefaultScratchLimitMB, MaxScratchLimitMB)
	if err != nil {
		return toolConfig{}, fmt.Errorf("%s.json: %v", name, err)
	}
	return toolConfig{spec: spec, memoryBytes: uint64(memoryMB) << 20, scratchBytes: scratchMB << 20}, nil
}

// limitMB checks a limit in MiB: unset (0) takes def; else from 1 to max.
func limitMB(field string, v, def, max int64) (int64, error) {
	switch {
	case v == 0:
		return def, nil
	case v < 1 || v > max:
		return 0, fmt.Errorf("%s must be from 1 to %d, got %d", field, max, v)
	}
	return v, nil
}
