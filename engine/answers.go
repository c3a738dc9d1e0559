package engine

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// errorCodePattern is the shape of a tool error code a client may report.
var errorCodePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// checkAnswer validates an answer's shape and returns the outcome it asks
// for, or the reason it is refused: before the transaction, so that a bad
// answer of a batch is refused alone. Text stored as it is must be
// storable on every database (toolgate.CheckPlainText; the JSON of output
// and details valid UTF-8). A reported cost must pass toolgate.CheckCost.
func checkAnswer(a toolgate.Answer) (store.Outcome, *toolgate.Error) {
	if a.ID == "" {
		return store.Outcome{}, toolgate.Errorf(toolgate.EBadRequest, "id is required")
	}
	// A cost may come with either answer: a call that failed may still
	// have cost something (a paid request that then timed out upstream).
	if a.Cost != nil {
		if err := toolgate.CheckCost("cost", *a.Cost); err != nil {
			return store.Outcome{}, err.(*toolgate.Error)
		}
	}
	success := a.Type == toolgate.AnswerResult
	switch {
	case a.Type == toolgate.AnswerResult || a.Type == toolgate.AnswerError:
		if a.Success != nil && *a.Success != success {
			return store.Outcome{}, toolgate.Errorf(toolgate.EBadRequest, "success contradicts type %s", a.Type)
		}
	case a.Type == "" && a.Success != nil:
		success = *a.Success
	default:
		return store.Outcome{}, toolgate.Errorf(toolgate.EBadRequest, `type must be "tool_result" or "tool_error"`)
	}
	if success {
		output := a.Output
		if len(output) == 0 {
			output = json.RawMessage("null")
		}
		// Kept as sent: an invalid byte would be stored (and refused by
		// PostgreSQL), where a reader of the JSON sees U+FFFD.
		if !utf8.Valid(output) {
			return store.Outcome{}, toolgate.Errorf(toolgate.EBadRequest, "output is not valid UTF-8")
		}
		return store.Outcome{Status: toolgate.StatusCompleted, Output: []byte(compactJSON(output)), Cost: a.Cost}, nil
	}
	code := a.Code
	if code == "" {
		code = toolgate.EInternal
	}
	if !errorCodePattern.MatchString(code) {
		return store.Outcome{}, toolgate.Errorf(toolgate.EBadRequest, "code must be an upper-case error code such as AUTH_REQUIRED")
	}
	message := a.Error
	if message == "" {
		message = "the tool reported an error"
	}
	// Stored as plain text: no NUL, refused by PostgreSQL (kept by SQLite).
	if err := toolgate.CheckPlainText(message); err != nil {
		return store.Outcome{}, toolgate.Errorf(toolgate.EBadRequest, "error %v", err)
	}
	o := store.Outcome{Status: toolgate.StatusFailed, ErrorCode: code, ErrorMessage: message, Cost: a.Cost}
	if len(a.Details) > 0 && string(a.Details) != "null" {
		var obj map[string]any
		if !utf8.Valid(a.Details) {
			return store.Outcome{}, toolgate.Errorf(toolgate.EBadRequest, "details is not valid UTF-8")
		}
		if err := json.Unmarshal(a.Details, &obj); err != nil {
			return store.Outcome{}, toolgate.Errorf(toolgate.EBadRequest, "details must be a JSON object")
		}
		o.ErrorDetails = []byte(compactJSON(a.Details))
	}
	return o, nil
}

// SubmitAnswers stores a session's answers to its calls, all in one
// transaction, and returns one acknowledgement per answer, in order. The
// first answer to a call wins; a later one is acknowledged as a duplicate
// and changes nothing. An answer for a call that was timed out, cancelled
// or denied gets CALL_CLOSED; for a call this session does not own,
// NOT_FOUND. Acknowledgements are returned only after the commit.
func (e *Delivery) SubmitAnswers(ctx context.Context, sid string, answers []toolgate.Answer) ([]toolgate.AnswerAck, error) {
	acks := make([]toolgate.AnswerAck, len(answers))
	outcomes := make([]store.Outcome, len(answers))
	for i, a := range answers {
		acks[i].ID = a.ID
		o, err := checkAnswer(a)
		if err == nil && !toolgate.WellFormedID(a.ID) {
			// No call has such an id: not looked for.
			err = toolgate.Errorf(toolgate.ENotFound, "this session has no call %q (a call id is a lowercase UUID)", a.ID)
		}
		if err != nil {
			acks[i].Error = err
			continue
		}
		outcomes[i] = o
	}
	now := e.now()
	// Deliveries not yet written are written by the answers' own statement.
	marks := make([]deliveryMark, len(answers))
	for i := range answers {
		if acks[i].Error == nil {
			marks[i] = e.marks.take(acks[i].ID)
		}
	}
	type answered struct {
		acks  []toolgate.AnswerAck
		ended []endedCall
	}
	done, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (answered, error) {
		// A fresh copy each run: a run rolled back leaves nothing behind.
		out := answered{acks: slices.Clone(acks)}
		for i := range answers {
			ack := &out.acks[i]
			if ack.Error != nil {
				continue
			}
			// The usual case in one statement: an open call of this session.
			ended, err := tx.FinishAnswered(ack.ID, sid, outcomes[i], now, marks[i].first, marks[i].count)
			if err != nil {
				return answered{}, err
			}
			if ended != nil {
				// The woken caller reads the record from memory, not the table.
				tx.RememberFinal(*ended)
				ack.Status = outcomes[i].Status
				out.ended = append(out.ended, endedCall{id: ack.ID, status: ack.Status, created: ended.CreatedTime()})
				continue
			}
			// Otherwise say why not.
			row, err := tx.GetCall(ack.ID)
			if err != nil {
				return answered{}, err
			}
			if row == nil || row.SessionID.String != sid {
				ack.Error = toolgate.Errorf(toolgate.ENotFound, "this session has no call %s", ack.ID)
				continue
			}
			status := toolgate.CallStatus(row.Status)
			switch status {
			case toolgate.StatusCompleted, toolgate.StatusFailed:
				ack.Status, ack.Duplicate = status, true
				continue
			case toolgate.StatusTimedOut, toolgate.StatusCancelled, toolgate.StatusDenied:
				ack.Error = toolgate.Errorf(toolgate.ECallClosed, "call %s has already ended: %s", ack.ID, status)
				continue
			case toolgate.StatusAwaitingApproval:
				ack.Error = toolgate.Errorf(toolgate.EConflict, "call %s is awaiting approval and was not sent to this client", ack.ID)
				continue
			}
			// Open, yet not ended above: it changed between the statements,
			// which the single writer rules out; report it as a conflict.
			ack.Error = toolgate.Errorf(toolgate.EConflict, "call %s could not be answered in status %s", ack.ID, status)
		}
		return out, nil
	})
	// Deliveries an answer did not record go back, to be written later.
	for i := range answers {
		if err != nil || done.acks[i].Error != nil || done.acks[i].Duplicate || done.acks[i].Status == "" {
			e.marks.restore(acks[i].ID, marks[i])
		}
	}
	if err != nil {
		return nil, err
	}
	e.afterCallsEnded(done.ended...)
	return done.acks, nil
}

// ReportProgress stores a call's latest progress and pushes its deadline
// out by the call's timeout, never past its creation plus the gateway's
// maximum call length, and never earlier than it was; then it passes the
// report to those watching the call (a run waiting on it).
func (e *Delivery) ReportProgress(ctx context.Context, sid string, p toolgate.ProgressReport) (*toolgate.ProgressAck, error) {
	if p.Type != "" && p.Type != "tool_progress" {
		return nil, toolgate.Errorf(toolgate.EBadRequest, `type must be "tool_progress"`)
	}
	if p.ID == "" {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "id is required")
	}
	if !toolgate.WellFormedID(p.ID) {
		return nil, toolgate.Errorf(toolgate.ENotFound, "this session has no call %q (a call id is a lowercase UUID)", p.ID)
	}
	progress := p.Progress
	if len(progress) == 0 {
		progress = json.RawMessage("null")
	}
	if len(progress) > 16<<10 {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "progress is limited to 16 KiB")
	}
	if !utf8.Valid(progress) {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "progress is not valid UTF-8")
	}
	progress = json.RawMessage(compactJSON(progress))
	now := e.now()
	deadline, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (time.Time, error) {
		row, err := tx.GetCall(p.ID)
		if err != nil {
			return time.Time{}, err
		}
		if row == nil || row.SessionID.String != sid {
			return time.Time{}, store.Refuse(toolgate.Errorf(toolgate.ENotFound, "this session has no call %s", p.ID))
		}
		if toolgate.CallStatus(row.Status).Final() {
			return time.Time{}, store.Refuse(toolgate.Errorf(toolgate.ECallClosed, "call %s has already ended: %s", p.ID, row.Status))
		}
		deadline := e.progressDeadline(row, now)
		_, err = tx.SetProgress(p.ID, progress, deadline)
		return deadline, err
	})
	if err != nil {
		return nil, err
	}
	e.deadlines.schedule(p.ID, deadline)
	e.progress.reported(p.ID, progress)
	e.log.Debug("call progress", "call", p.ID, "deadline", deadline)
	return &toolgate.ProgressAck{Type: "progress_acknowledged", ID: p.ID, Deadline: toolgate.NewTime(deadline)}, nil
}

// progressDeadline is an open call's deadline after a progress report at
// now: its timeout from now, at most the longest timeout after its
// creation, and never earlier than it was.
func (e *core) progressDeadline(row *store.CallRow, now time.Time) time.Time {
	deadline := now.Add(time.Duration(row.TimeoutMS) * time.Millisecond)
	if limit := row.CreatedTime().Add(e.cfg.MaxTimeout); deadline.After(limit) {
		deadline = limit
	}
	if current := row.DeadlineTime(); deadline.Before(current) {
		deadline = current
	}
	return deadline
}
