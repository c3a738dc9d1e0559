package agentloop

import (
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate"
)

// What a run costs its model grows with the square of its steps: every
// request resends the whole conversation so far, with the tools'
// definitions. A bound on the runs that start does not bound that, so
// Runner.MaxInputBytes bounds the sum of a run's requests: a run whose
// next request would pass it fails with MAX_INPUT, and a run whose first
// messages alone pass it is not started (413). Sizes are those of the
// messages as JSON and of the definitions' names, descriptions and
// parameters: what the model's endpoint is sent, give or take its
// envelope.

// inputMeter counts what a run has sent its model, in bytes. It is Drive's
// own: one run, one goroutine.
type inputMeter struct {
	sent     int64 // the requests made so far
	messages int64 // the size of the first counted messages
	counted  int   // how many of the run's messages are in messages
}

// newInputMeter starts counting for a run, with what its stored steps
// sent (a run that goes on after a restart): each model reply was
// preceded by a request holding every message before it. The
// definitions of those requests are not known again and not counted.
func newInputMeter(run *toolgate.Run) *inputMeter {
	m := &inputMeter{}
	for i, msg := range run.Messages {
		if i >= run.InputMessages && msg.Role == toolgate.RoleAssistant {
			m.sent += m.messages
		}
		m.messages += messageSize(msg)
		m.counted++
	}
	return m
}

// next counts the request about to be sent (messages and defs) and
// reports, with the failure's message, whether it would bring the run
// past limit (0 or less: no limit); then it is not counted.
func (m *inputMeter) next(messages []toolgate.ChatMessage, defs []Definition, limit int64) (string, bool) {
	for _, msg := range messages[m.counted:] {
		m.messages += messageSize(msg)
	}
	m.counted = len(messages)
	request := m.messages + definitionsSize(defs)
	if limit > 0 && m.sent+request > limit {
		return fmt.Sprintf("the run has sent its model %d bytes, and its next request (%d bytes: the conversation so far and the tools) "+
			"would pass the %d bytes one run may send in all; start a new run with a shorter conversation", m.sent, request, limit), true
	}
	m.sent += request
	return "", false
}

// checkFirstInput refuses (413 PAYLOAD_TOO_LARGE) a run whose input
// messages alone pass what the run may send its model in all.
func (r *Runner) checkFirstInput(messages []toolgate.ChatMessage) error {
	if r.MaxInputBytes <= 0 {
		return nil
	}
	var size int64
	for _, msg := range messages {
		size += messageSize(msg)
	}
	if size > r.MaxInputBytes {
		return toolgate.Errorf(toolgate.EPayloadTooLarge,
			"the run's messages are %d bytes, more than the %d bytes one run may send its model in all", size, r.MaxInputBytes)
	}
	return nil
}

func messageSize(msg toolgate.ChatMessage) int64 {
	b, err := json.Marshal(msg)
	if err != nil {
		return int64(len(msg.Content))
	}
	return int64(len(b))
}

func definitionsSize(defs []Definition) int64 {
	var n int64
	for _, d := range defs {
		n += int64(len(d.Name) + len(d.Description) + len(d.Parameters))
	}
	return n
}
