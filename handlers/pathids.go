package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// idInPath refuses, with 404 NOT_FOUND, a request whose path parameter
// param (a session's {sid}, a call's or a run's {id}) does not have the
// shape of the ids the gateway gives (toolgate.WellFormedID): such an id
// names nothing, and the database is not read for it (PostgreSQL would
// refuse a NUL or an invalid byte in it). what names the resource in the
// message ("session", "call", "run"). It runs after the route's
// authentication, so a request without credentials is told that first.
func idInPath(param, what string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id := chi.URLParam(r, param); !toolgate.WellFormedID(id) {
				jsonhttp.WriteError(w, r, notWellFormed(what, id))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// notWellFormed is the NOT_FOUND of an id of a what that is not shaped as
// the gateway's ids are.
func notWellFormed(what, id string) *toolgate.Error {
	return toolgate.Errorf(toolgate.ENotFound, "no %s %q (a %s id is a lowercase UUID, as the gateway gives it)", what, id, what)
}

// sessionInPath is idInPath for a session's {sid}.
var sessionInPath = idInPath("sid", "session")

// callInPath is idInPath for a call's {id}.
var callInPath = idInPath("id", "call")

// runInPath is idInPath for a run's {id}.
var runInPath = idInPath("id", "run")

// checkIdempotencyKey refuses (400) an Idempotency-Key that is not
// printable text (toolgate.CheckPrintableText): net/http lets bytes of
// 0x80 and above through in a header value, and PostgreSQL refuses
// invalid UTF-8 and NUL. Its length is the engine's to check.
func checkIdempotencyKey(key string) error {
	if err := toolgate.CheckPrintableText(key); err != nil {
		return toolgate.Errorf(toolgate.EBadRequest, "Idempotency-Key %v", err)
	}
	return nil
}

// sessionFilter checks the session_id of a query that filters by session:
// "" (no filter) or a well-formed id; refused otherwise with code (400
// for a filter of a list, 404 where an unknown session is 404).
func sessionFilter(sid, code string) error {
	if sid == "" || toolgate.WellFormedID(sid) {
		return nil
	}
	if code == toolgate.ENotFound {
		return notWellFormed("session", sid)
	}
	return toolgate.Errorf(code, "session_id must be a session id as the gateway gives it (a lowercase UUID), not %q", sid)
}

// textParam checks a query parameter kept as text (a tool's name): it
// must be valid UTF-8 without NUL (toolgate.CheckPlainText), else 400.
func textParam(name, value string) error {
	if err := toolgate.CheckPlainText(value); err != nil {
		return toolgate.Errorf(toolgate.EBadRequest, "%s %v", name, err)
	}
	return nil
}
