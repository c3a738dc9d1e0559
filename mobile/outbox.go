package mobile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	backoff "gopkg.in/cenkalti/backoff.v1"

	"github.com/toolgate/toolgate"
)

// answer is a tool_result or tool_error message.
type answer = toolgate.Answer

// resultAnswer returns the tool_result carrying output.
func resultAnswer(callID string, output []byte) answer {
	success := true
	return answer{Type: toolgate.AnswerResult, ID: callID, Success: &success, Output: output}
}

// errorAnswer returns the tool_error carrying te.
func errorAnswer(callID string, te *ToolError) answer {
	success := false
	return answer{Type: toolgate.AnswerError, ID: callID, Success: &success, Error: te.Message, Code: te.Code, Details: te.details()}
}

// batchRequest carries several answers in one post.
type batchRequest struct {
	Type    string   `json:"type"`
	Results []answer `json:"results"`
}

// ackReply is result_acknowledged, or results_acknowledged with one entry
// per answer.
type ackReply struct {
	toolgate.AnswerAck
	Results []toolgate.AnswerAck `json:"results"`
}

// ackCode returns an entry's error code, or "" when the answer was taken.
func ackCode(e toolgate.AnswerAck) string {
	if e.Error == nil {
		return ""
	}
	if e.Error.Code == "" {
		return toolgate.EInternal
	}
	return e.Error.Code
}

// finalCodes are errors that posting the same answer again cannot change:
// the call ended, is not this session's, or the answer is malformed.
var finalCodes = map[string]bool{
	toolgate.ECallClosed: true, toolgate.ENotFound: true, toolgate.EBadRequest: true,
	toolgate.EInvalidArgs: true, toolgate.EConflict: true, toolgate.EPermissionDenied: true,
}

// outbox posts answers until the gateway acknowledges each, retrying with
// backoff, and sends the answers that are ready together in one
// tool_results post.
type outbox struct {
	client   *Client
	maxBatch int

	mu      sync.Mutex
	pending []answer
	wake    chan struct{}
	idle    chan struct{} // closed while nothing is pending or in flight
	busy    bool
}

func newOutbox(c *Client, maxBatch int) *outbox {
	idle := make(chan struct{})
	close(idle)
	return &outbox{client: c, maxBatch: maxBatch, wake: make(chan struct{}, 1), idle: idle}
}

func (o *outbox) add(a answer) {
	o.mu.Lock()
	o.pending = append(o.pending, a)
	if !o.busy {
		o.busy = true
		o.idle = make(chan struct{})
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// take removes up to maxBatch answers.
func (o *outbox) take() []answer {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := min(len(o.pending), o.maxBatch)
	batch := append([]answer(nil), o.pending[:n]...)
	o.pending = o.pending[n:]
	return batch
}

// putBack returns unacknowledged answers to the front of the queue.
func (o *outbox) putBack(answers []answer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = append(append([]answer(nil), answers...), o.pending...)
}

// settle marks the outbox idle when nothing is left.
func (o *outbox) settle() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 && o.busy {
		o.busy = false
		close(o.idle)
	}
}

// drop discards everything pending (the session they belong to is gone).
func (o *outbox) drop() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(o.pending)
	o.pending = nil
	return n
}

// idleChan returns a channel closed once every answer is acknowledged.
func (o *outbox) idleChan() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.idle
}

// run posts answers until ctx ends.
func (o *outbox) run(ctx context.Context) {
	retry := backoff.NewExponentialBackOff()
	retry.InitialInterval = 250 * time.Millisecond
	retry.MaxInterval = 30 * time.Second
	retry.MaxElapsedTime = 0 // an answer is retried until acknowledged
	for {
		batch := o.take()
		if len(batch) == 0 {
			o.settle()
			select {
			case <-ctx.Done():
				return
			case <-o.wake:
				continue
			}
		}
		failed, wait := o.post(ctx, batch)
		if len(failed) == 0 {
			retry.Reset()
			continue
		}
		o.putBack(failed)
		if wait == 0 {
			wait = retry.NextBackOff()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// post sends a batch and returns the answers to try again and, when the
// gateway asked for it, how long to wait first.
func (o *outbox) post(ctx context.Context, batch []answer) (failed []answer, wait time.Duration) {
	c := o.client
	sess, ok := c.session.get()
	if !ok {
		return batch, 0
	}
	var body any = batch[0]
	if len(batch) > 1 {
		body = batchRequest{Type: toolgate.AnswerBatch, Results: batch}
	}
	var reply ackReply
	resp, err := c.api.do(ctx, c.api.http, http.MethodPost, sessionPath(sess.id, "/results"), sess.token, body, &reply)
	var apiErr *APIError
	switch {
	case err == nil:
		return o.judge(batch, reply), 0
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusRequestEntityTooLarge:
		return o.tooLarge(batch), 0
	case errors.As(err, &apiErr) && len(batch) == 1 && finalCodes[apiErr.Code]:
		c.log(LevelInfo, fmt.Sprintf("answer to call %s not taken (%s: %s); not retried", batch[0].ID, apiErr.Code, apiErr.Message))
		return nil, 0
	case errors.As(err, &apiErr) && apiErr.sessionLost():
		c.log(LevelWarn, fmt.Sprintf("answers for %d call(s) refused: the session is no longer valid (%s)", len(batch), apiErr.Message))
		c.noteSessionLost()
		return batch, 0
	default:
		c.log(LevelWarn, fmt.Sprintf("posting %d answer(s) failed, retrying: %v", len(batch), err))
		return batch, retryAfter(resp)
	}
}

// judge reads the acknowledgement of a post and returns the answers the
// gateway has not taken for good.
func (o *outbox) judge(batch []answer, reply ackReply) []answer {
	if len(batch) == 1 && reply.Type != toolgate.BatchAckType {
		return nil // result_acknowledged, duplicate or not: done
	}
	byID := make(map[string]toolgate.AnswerAck, len(reply.Results))
	for _, e := range reply.Results {
		byID[e.ID] = e
	}
	var failed []answer
	for _, a := range batch {
		e, ok := byID[a.ID]
		switch {
		case !ok:
			failed = append(failed, a)
		case ackCode(e) == "":
		case finalCodes[ackCode(e)]:
			o.client.log(LevelInfo, fmt.Sprintf("answer to call %s not taken (%s); not retried", a.ID, ackCode(e)))
		default:
			failed = append(failed, a)
		}
	}
	return failed
}

// tooLarge handles a 413: a batch is split into single posts; a single
// answer too large for the gateway is replaced by a tool_error saying so.
func (o *outbox) tooLarge(batch []answer) []answer {
	if len(batch) > 1 {
		o.mu.Lock()
		o.maxBatch = 1
		o.mu.Unlock()
		return batch
	}
	a := batch[0]
	o.client.log(LevelWarn, fmt.Sprintf("answer to call %s is larger than the gateway accepts; sending an error instead", a.ID))
	return []answer{errorAnswer(a.ID, &ToolError{Code: CodeInternalError, Message: "the tool's output is larger than the gateway accepts"})}
}
