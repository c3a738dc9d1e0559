package mcpserve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// codeInvalidRequest is JSON-RPC's error code of a message that is not a
// valid request.
const codeInvalidRequest = -32600

// strictBody holds a POST's JSON body to toolgate.CheckStrictJSONBody
// before the SDK reads it: a member named twice (the SDK keeps the last,
// a proxy or a log may read the first: {"name":"echo","name":"gated"} was
// a call of gated), invalid UTF-8 or half a surrogate pair is refused 400
// with a JSON-RPC error, and false returned. A body past limit, or one
// that is not JSON, goes on to the SDK (which refuses it in its words),
// as does every body that passes, r.Body then reading it again. The SDK
// matches member names case-sensitively, so names are compared exactly.
// The body is returned when it is JSON within limit (else nil).
func strictBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	rest := r.Body
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), rest), rest}
	if err != nil || int64(len(body)) > limit || !json.Valid(body) {
		return nil, true
	}
	err = toolgate.CheckStrictJSONBody(body)
	if err == nil {
		return body, true
	}
	// The id is null: which of the request's ids (if two) is not known.
	jsonhttp.WriteJSON(w, http.StatusBadRequest, map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": codeInvalidRequest, "message": "the body " + err.Error()},
	})
	return nil, false
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}
