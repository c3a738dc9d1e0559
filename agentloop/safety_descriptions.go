package agentloop

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/outputsafety"
)

// DescriptionWithheld is what the model is shown instead of a tool's
// description, or of its parameters' descriptions, that held text aimed
// at it.
const DescriptionWithheld = outputsafety.DescriptionWithheld

// guardDescriptions returns tools as the model may be shown them: the
// description and parameters of a tool from outside the gateway (a
// client's, an imported server's, a sandboxed one) pass the guard's
// injection search, since a client writes them as it writes its outputs.
// A flagged description is replaced by DescriptionWithheld; flagged
// parameters have their descriptions and titles replaced so, or, when
// that is not enough, become {"type":"object"}. The tools withheld are
// logged through the runner's withheldLog: each once, in one line.
func (r *Runner) guardDescriptions(runID string, tools []toolgate.Tool) []toolgate.Tool {
	if r.Guard == nil {
		return tools
	}
	out, copied := tools, false
	var flagged []withheldTool
	for i, t := range tools {
		if !describedFromOutside(t) {
			continue
		}
		sc := outputsafety.ScreenTool(t.Description(), t.Parameters(), func(v json.RawMessage) []OutputFinding {
			return r.Guard.GuardOutput(t.Name(), v, true).Findings
		})
		if !sc.Withheld() {
			continue
		}
		if !copied {
			out, copied = append([]toolgate.Tool(nil), tools...), true // tools is the caller's
		}
		out[i] = describedTool{Tool: t, description: sc.Description, parameters: sc.Parameters}
		flagged = append(flagged, withheldTool{tool: t, findings: sc.Findings})
	}
	if len(flagged) > 0 {
		r.withheld.note(r.log(), runID, flagged)
	}
	return out
}

// withheldTool is a tool whose description was withheld, and why.
type withheldTool struct {
	tool     toolgate.Tool
	findings []OutputFinding
}

// Bounds of withheldLog.
const (
	withheldLogInterval = 10 * time.Second // the least time between two lines
	withheldLogRemember = 4096             // tools remembered as logged; then forgotten all
	withheldLogNames    = 8                // tools named in one line
)

// withheldLog logs the tools whose description was withheld without
// letting a client that registers many flagged tools and starts many runs
// fill the log: a tool (its name, description and parameters) is logged
// once while remembered, the tools a run newly finds share one line, and
// lines are at least withheldLogInterval apart (the tools found meanwhile
// are counted in the next). Every run screens its tools again all the
// same; only the log is bounded.
type withheldLog struct {
	mu       sync.Mutex
	seen     map[[sha256.Size]byte]struct{}
	last     time.Time
	unlogged int              // tools found since the last line, not named in one
	now      func() time.Time // nil: time.Now
	interval time.Duration    // zero: withheldLogInterval
}

// note logs the tools of a run not logged before, if the interval allows.
func (l *withheldLog) note(log *slog.Logger, runID string, tools []withheldTool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil || len(l.seen) >= withheldLogRemember {
		l.seen = map[[sha256.Size]byte]struct{}{}
	}
	var fresh []withheldTool
	for _, w := range tools {
		h := sha256.New()
		fmt.Fprintf(h, "%d:%s%d:%s", len(w.tool.Name()), w.tool.Name(), len(w.tool.Description()), w.tool.Description())
		h.Write(w.tool.Parameters())
		var k [sha256.Size]byte
		h.Sum(k[:0])
		if _, ok := l.seen[k]; !ok {
			l.seen[k] = struct{}{}
			fresh = append(fresh, w)
		}
	}
	if len(fresh) == 0 {
		return
	}
	now, every := time.Now, l.interval
	if l.now != nil {
		now = l.now
	}
	if every <= 0 {
		every = withheldLogInterval
	}
	t := now()
	if !l.last.IsZero() && t.Sub(l.last) < every {
		l.unlogged += len(fresh)
		return
	}
	names := make([]string, 0, withheldLogNames)
	for _, w := range fresh[:min(len(fresh), withheldLogNames)] {
		names = append(names, w.tool.Name())
	}
	log.Warn("tools' descriptions held text aimed at the model: the model is shown them withheld",
		"run", runID, "count", len(fresh), "tools", names, "findings", fresh[0].findings, "earlier_unlogged", l.unlogged)
	l.last, l.unlogged = t, 0
}

// describedFromOutside reports whether the tool's description was written
// outside the gateway.
func describedFromOutside(t toolgate.Tool) bool {
	if s, ok := t.(interface{ Source() toolgate.ToolSource }); ok {
		return s.Source().Kind != toolgate.SourceBuiltin
	}
	return requiresSanitization(t)
}

// describedTool is a tool shown to the model with another description and
// parameters; only Definitions reads it.
type describedTool struct {
	toolgate.Tool
	description string
	parameters  json.RawMessage
}

// Description implements toolgate.Tool.
func (t describedTool) Description() string { return t.description }

// Parameters implements toolgate.Tool.
func (t describedTool) Parameters() json.RawMessage { return t.parameters }
