// Package jsonhttp writes the gateway's JSON replies: a value with its
// status, and an error as the protocol's error body, its HTTP status
// taken from the one table that maps error codes to statuses. It also
// reads the bearer secret of a request, and carries the logger the
// internal errors a reply reports go to. Both HTTP faces of the gateway
// (the REST API in handlers, the MCP endpoint in mcpserve) use it, so
// that neither imports the other and both answer alike.
package jsonhttp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate"
)

// statusOf maps each error code to its HTTP status; the one table of it.
var statusOf = map[string]int{
	toolgate.EBadRequest:       http.StatusBadRequest,
	toolgate.EUnauthenticated:  http.StatusUnauthorized,
	toolgate.EPermissionDenied: http.StatusForbidden,
	toolgate.ENotFound:         http.StatusNotFound,
	toolgate.EToolNotFound:     http.StatusNotFound,
	toolgate.EConflict:         http.StatusConflict,
	toolgate.ECallClosed:       http.StatusConflict,
	toolgate.EPayloadTooLarge:  http.StatusRequestEntityTooLarge,
	toolgate.EInvalidArgs:      http.StatusUnprocessableEntity,
	toolgate.ERateLimited:      http.StatusTooManyRequests,
	toolgate.ESessionOffline:   http.StatusServiceUnavailable,
	toolgate.EToolOffline:      http.StatusServiceUnavailable,
	toolgate.ETimeout:          http.StatusGatewayTimeout,
	toolgate.EInternal:         http.StatusInternalServerError,

	// Browser-facing refusals (the handlers' browser and host checks).
	toolgate.EUnsupportedMediaType: http.StatusUnsupportedMediaType,
	toolgate.EMisdirectedRequest:   http.StatusMisdirectedRequest,

	// The runs API on a gateway started without a model.
	toolgate.EModelNotConfigured: http.StatusServiceUnavailable,

	// A write the full disk could not take.
	toolgate.EStorageFull: http.StatusServiceUnavailable,

	// A request the database could not serve right now (PostgreSQL).
	toolgate.EStorageUnavailable: http.StatusServiceUnavailable,
}

// Codes lists the error codes the status table maps, sorted.
func Codes() []string {
	codes := make([]string, 0, len(statusOf))
	for code := range statusOf {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	return codes
}

// StatusOf returns the HTTP status for an error code (500 when unknown).
func StatusOf(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// WriteJSON writes v as a JSON reply with the status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	// An error here means the client has gone; there is no one to tell.
	_ = json.NewEncoder(w).Encode(v)
}

// ClientGone reports whether err is the request's own context ending: the
// client went away while the database was being read (on PostgreSQL a
// read is a round trip the context cancels), which is nobody's error.
func ClientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil && errors.Is(err, context.Canceled)
}

// WriteError writes err as the protocol's error body. Errors that are not
// *toolgate.Error are internal: logged (to RequestLogger), shown as
// "Internal error.".
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	code := toolgate.ErrorCode(err)
	if code == toolgate.EInternal {
		var te *toolgate.Error
		if !errors.As(err, &te) && !ClientGone(r, err) {
			RequestLogger(r).Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	body := map[string]any{"code": code, "message": toolgate.ErrorMessage(err)}
	var te *toolgate.Error
	if errors.As(err, &te) {
		if len(te.Details) > 0 {
			body["details"] = te.Details
		}
		if te.RetryAfterSeconds > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(te.RetryAfterSeconds))
		}
	}
	WriteJSON(w, StatusOf(code), map[string]any{"error": body})
}

// loggerKey keys the gateway's logger in a request's context.
type loggerKey struct{}

// WithLogger returns ctx carrying log, for the internal errors WriteError
// logs (it is called with the request, not with whoever serves it). The
// server puts it in every connection's base context once
// (http.Server.BaseContext), rather than in each request's.
func WithLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

// discardLog is the logger of a request whose context carries none.
var discardLog = slog.New(slog.DiscardHandler)

// RequestLogger returns the logger r's context carries (WithLogger); a
// request served without one logs nowhere.
func RequestLogger(r *http.Request) *slog.Logger {
	if log, ok := r.Context().Value(loggerKey{}).(*slog.Logger); ok {
		return log
	}
	return discardLog
}

// Bearer returns the secret of an "Authorization: Bearer" header; with
// allowQuery, an access_token query parameter is accepted too (a browser
// EventSource cannot set headers).
func Bearer(r *http.Request, allowQuery bool) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			return strings.TrimSpace(h[7:])
		}
		return ""
	}
	if allowQuery {
		return r.URL.Query().Get("access_token")
	}
	return ""
}
