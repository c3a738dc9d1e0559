package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// wsMessage is every message of the baseline's WebSocket protocol, the one
// toolgate replaces: register_tools / tools_registered from the client's
// side of registration, tool_call_request to the client, tool_result or
// tool_error back, result_acknowledged in reply.
type wsMessage struct {
	Type      string          `json:"type"`
	SessionID string          `json:"session_id,omitempty"`
	Tools     []wsTool        `json:"tools,omitempty"`
	Count     int             `json:"count,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	Success   bool            `json:"success,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Status    string          `json:"status,omitempty"`
}

// wsTool is a tool as the client registers it.
type wsTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// callRecord is the reply of POST /v1/calls, in the fields toolgate's call
// record shares with it.
type callRecord struct {
	ID          string          `json:"id"`
	SessionID   string          `json:"session_id"`
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args"`
	Status      string          `json:"status"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       *callError      `json:"error,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	CompletedAt *time.Time      `json:"completed_at,omitempty"`
	DurationMS  int64           `json:"duration_ms"`
}

type callError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// callRequest is the body of POST /v1/calls (the same shape as toolgate's).
type callRequest struct {
	SessionID string          `json:"session_id"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	TimeoutMS int64           `json:"timeout_ms"`
	Wait      *bool           `json:"wait"`
}

// baseline is the in-memory WebSocket gateway toolgate is compared with:
// sessions live as long as their socket, calls as long as their waiting
// caller, and nothing is written anywhere. It is written the way the
// gateway toolgate replaces is (one oneshot channel and one timer per call,
// one socket write per message), without its agent and registries.
type baseline struct {
	agentKey string
	timeout  time.Duration

	mu       sync.Mutex
	sessions map[string]*wsSession
}

// wsSession is one connected client.
type wsSession struct {
	id    string
	conn  *websocket.Conn
	tools map[string]bool

	mu      sync.Mutex
	pending map[string]chan wsMessage
}

func newBaseline(agentKey string) *baseline {
	return &baseline{agentKey: agentKey, timeout: 30 * time.Second, sessions: map[string]*wsSession{}}
}

// handler routes the client socket and the caller endpoint.
func (b *baseline) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/ws", b.handleSocket)
	mux.HandleFunc("POST /v1/calls", b.handleCall)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

// handleSocket serves one client: its first message registers its tools,
// then it answers calls until the socket closes, when its tools and its
// calls in flight are gone.
func (b *baseline) handleSocket(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(1 << 20)
	ctx := r.Context()
	s := &wsSession{id: uuid.NewString(), conn: conn, tools: map[string]bool{}, pending: map[string]chan wsMessage{}}
	defer func() {
		b.mu.Lock()
		delete(b.sessions, s.id)
		b.mu.Unlock()
		s.mu.Lock()
		for id, ch := range s.pending {
			ch <- wsMessage{Type: "tool_error", ID: id, Error: "session_closed"}
			delete(s.pending, id)
		}
		s.mu.Unlock()
		conn.CloseNow()
	}()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m wsMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		switch m.Type {
		case "register_tools":
			s.mu.Lock()
			for _, t := range m.Tools {
				s.tools[t.Name] = true
			}
			s.mu.Unlock()
			b.mu.Lock()
			b.sessions[s.id] = s
			b.mu.Unlock()
			reply, _ := json.Marshal(wsMessage{Type: "tools_registered", SessionID: s.id, Count: len(m.Tools)})
			if conn.Write(ctx, websocket.MessageText, reply) != nil {
				return
			}
		case "tool_result", "tool_error":
			s.mu.Lock()
			ch := s.pending[m.ID]
			delete(s.pending, m.ID)
			s.mu.Unlock()
			status := "completed"
			if m.Type == "tool_error" {
				status = "failed"
			}
			if ch != nil {
				ch <- m
			}
			ack, _ := json.Marshal(wsMessage{Type: "result_acknowledged", ID: m.ID, Status: status})
			if conn.Write(ctx, websocket.MessageText, ack) != nil {
				return
			}
		}
	}
}

// errNoSession is a call to a session or tool that is not connected.
var errNoSession = errors.New("no connected session offers this tool")

// Call sends one call to its session's socket and waits for the answer or
// the timeout: the in-process caller's path.
func (b *baseline) Call(ctx context.Context, req callRequest) (*callRecord, error) {
	b.mu.Lock()
	s := b.sessions[req.SessionID]
	b.mu.Unlock()
	if s == nil {
		return nil, errNoSession
	}
	s.mu.Lock()
	known := s.tools[req.Tool]
	s.mu.Unlock()
	if !known {
		return nil, errNoSession
	}
	timeout := b.timeout
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	rec := &callRecord{ID: uuid.NewString(), SessionID: s.id, Tool: req.Tool, Args: req.Args, CreatedAt: time.Now()}
	ch := make(chan wsMessage, 1)
	s.mu.Lock()
	s.pending[rec.ID] = ch
	s.mu.Unlock()
	msg, _ := json.Marshal(wsMessage{Type: "tool_call_request", ID: rec.ID, Name: req.Tool, Args: req.Args})
	if err := s.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		s.mu.Lock()
		delete(s.pending, rec.ID)
		s.mu.Unlock()
		return nil, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case m := <-ch:
		now := time.Now()
		rec.CompletedAt = &now
		rec.DurationMS = now.Sub(rec.CreatedAt).Milliseconds()
		if m.Type == "tool_result" {
			rec.Status, rec.Output = "completed", m.Output
		} else {
			rec.Status, rec.Error = "failed", &callError{Code: "INTERNAL_ERROR", Message: m.Error}
		}
	case <-timer.C:
		rec.Status, rec.Error = "timed_out", &callError{Code: "TIMEOUT", Message: "no answer in time"}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	delete(s.pending, rec.ID)
	s.mu.Unlock()
	return rec, nil
}

// handleCall is POST /v1/calls with wait, as toolgate's.
func (b *baseline) handleCall(w http.ResponseWriter, r *http.Request) {
	if strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) != b.agentKey {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": callError{Code: "UNAUTHENTICATED", Message: "agent key required"}})
		return
	}
	var req callRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": callError{Code: "BAD_REQUEST", Message: err.Error()}})
		return
	}
	rec, err := b.Call(r.Context(), req)
	if errors.Is(err, errNoSession) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": callError{Code: "TOOL_NOT_FOUND", Message: err.Error()}})
		return
	} else if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": callError{Code: "INTERNAL_ERROR", Message: err.Error()}})
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
