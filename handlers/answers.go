package handlers

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// maxAnswersPerRequest bounds a tool_results batch.
const maxAnswersPerRequest = 1000

// answerHandlers serve a client's answers and progress reports.
type answerHandlers struct {
	answers Answers
}

// answersShape is the names a results body is read with: one answer, or
// a batch of them.
type answersShape struct {
	toolgate.Answer
	Results []toolgate.Answer `json:"results"`
}

// handleResults serves POST /v1/sessions/{sid}/results: one answer
// (tool_result or tool_error) or several (tool_results). The reply comes
// only after the answers are durably stored.
func (h *answerHandlers) handleResults(w http.ResponseWriter, r *http.Request) {
	sid := chi.URLParam(r, "sid")
	body, err := readBody(r, false)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	// The shape first: a batch's body is read as a batch only, and one
	// answer's body must not carry a malformed "results" either.
	var envelope struct {
		Type    string            `json:"type"`
		Results []json.RawMessage `json:"results"`
	}
	if err := decodeBytesAs(body, &envelope, false, (*answersShape)(nil)); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if envelope.Type != toolgate.AnswerBatch {
		var answer toolgate.Answer
		if err := decodeChecked(body, &answer, false); err != nil {
			jsonhttp.WriteError(w, r, err)
			return
		}
		acks, err := h.answers.SubmitAnswers(r.Context(), sid, []toolgate.Answer{answer})
		if err != nil {
			jsonhttp.WriteError(w, r, err)
			return
		}
		ack := acks[0]
		if ack.Error != nil {
			jsonhttp.WriteError(w, r, ack.Error)
			return
		}
		ack.Type = toolgate.AnswerAckType
		jsonhttp.WriteJSON(w, http.StatusOK, ack)
		return
	}
	if envelope.Results == nil {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "tool_results needs a results array"))
		return
	}
	if len(envelope.Results) > maxAnswersPerRequest {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "at most %d answers per request", maxAnswersPerRequest))
		return
	}
	answers := make([]toolgate.Answer, len(envelope.Results))
	bad := make([]*toolgate.Error, len(envelope.Results))
	var valid []toolgate.Answer
	for i, raw := range envelope.Results {
		if err := decodeChecked(raw, &answers[i], false); err != nil {
			bad[i] = err.(*toolgate.Error)
			continue
		}
		valid = append(valid, answers[i])
	}
	acks, err := h.answers.SubmitAnswers(r.Context(), sid, valid)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	out := make([]toolgate.AnswerAck, len(answers))
	next := 0
	for i := range answers {
		if bad[i] != nil {
			out[i] = toolgate.AnswerAck{ID: answers[i].ID, Error: bad[i]}
			continue
		}
		out[i] = acks[next]
		next++
	}
	jsonhttp.WriteJSON(w, http.StatusOK, map[string]any{"type": toolgate.BatchAckType, "results": out})
}

// handleProgress serves POST /v1/sessions/{sid}/progress.
func (h *answerHandlers) handleProgress(w http.ResponseWriter, r *http.Request) {
	var p toolgate.ProgressReport
	if err := DecodeJSON(r, &p, false, false); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	ack, err := h.answers.ReportProgress(r.Context(), chi.URLParam(r, "sid"), p)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, ack)
}
