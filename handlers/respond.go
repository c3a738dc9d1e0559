package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate"
)

// DecodeJSON reads the request body into v. With strict, unknown fields are
// refused. An empty body is refused unless allowEmpty. Errors are
// *toolgate.Error with BAD_REQUEST, or PAYLOAD_TOO_LARGE past the limit.
func DecodeJSON(r *http.Request, v any, strict, allowEmpty bool) error {
	body, err := readBody(r, allowEmpty)
	if err != nil || len(body) == 0 {
		return err
	}
	return decodeBytes(body, v, strict)
}

// readBody reads the whole (size-limited) body; an empty or blank one is
// refused unless allowEmpty, and then returned as nil.
func readBody(r *http.Request, allowEmpty bool) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, toolgate.Errorf(toolgate.EPayloadTooLarge, "the request body is larger than the limit of %d bytes", tooLarge.Limit)
		}
		return nil, toolgate.Errorf(toolgate.EBadRequest, "could not read the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil, nil
		}
		return nil, toolgate.Errorf(toolgate.EBadRequest, "a JSON body is required")
	}
	return body, nil
}

// decodeBytes decodes one JSON value, explaining what is wrong with it,
// and holds the whole of it to toolgate.CheckStrictJSONBodyFor v.
func decodeBytes(body []byte, v any, strict bool) error {
	return decodeBytesAs(body, v, strict, v)
}

// decodeBytesAs is decodeBytes holding the body's member names to shape's
// (a value the body, or a part of it, is decoded into afterwards).
func decodeBytesAs(body []byte, v any, strict bool, shape any) error {
	if err := decodeChecked(body, v, strict); err != nil {
		return err
	}
	// The whole body is held to what args are held to: a member named
	// twice (Go keeps the last, other readers the first), invalid UTF-8
	// (Go reads U+FFFD) or half a surrogate pair is refused, not read one
	// way here and another by whoever reads it next; so is a member
	// named in another case than its field's ("TOOL", which Go reads as
	// "tool", case-insensitively, and others as another member).
	if err := toolgate.CheckStrictJSONBodyFor(body, shape); err != nil && !checkedOnItsOwn(body) {
		return toolgate.Errorf(toolgate.EBadRequest, "the body %s", err)
	}
	return nil
}

// ownChecks are the members of a request body whose values the gateway
// holds to toolgate.CheckStrictJSON itself, with messages that name them
// ("args names the member \"text\" twice", "metadata nests … deeper than
// 32 levels"): a call's args, a session's metadata.
var ownChecks = []string{"args", "metadata"}

// checkedOnItsOwn reports, for a body the strict check refused, whether a
// member of ownChecks fails it too: that member's own check then refuses
// the request, naming it, rather than the body's. Only refused bodies
// come here, so its cost is off the path of every request that passes.
func checkedOnItsOwn(body []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return false
	}
	for _, name := range ownChecks {
		if value, ok := top[name]; ok && toolgate.CheckStrictJSON(value) != nil {
			return true
		}
	}
	return false
}

// decodeChecked is decodeBytes for a value decodeBytes has checked
// already (the same body read again, or a part of it): it decodes only.
func decodeChecked(body []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return toolgate.Errorf(toolgate.EBadRequest, "%s", describeJSONError(err))
	}
	// Only JSON's white space may follow (dec.More would let a stray "]"
	// or "}" pass, bytes.TrimSpace a "\v").
	if len(bytes.Trim(body[dec.InputOffset():], " \t\r\n")) > 0 {
		return toolgate.Errorf(toolgate.EBadRequest, "the body must hold one JSON value")
	}
	return nil
}

func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("the body is not valid JSON (at byte %d): %v", syntax.Offset, err)
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return fmt.Sprintf("the body must be %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body is not valid JSON: it ends too early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "the body is not valid JSON: " + err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "ptr":
		return "a value of another type"
	}
	return "a number"
}
