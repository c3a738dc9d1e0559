package toolgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxJSONDepth is how deeply CheckStrictJSON lets objects and arrays
// nest: a call's args deeper than this are refused. It is the default
// nesting limit of common JSON readers (Rust's serde_json among them), so
// arguments the gateway forwards can be read by every client.
const MaxJSONDepth = 128

// CheckStrictJSON reports why raw is not one JSON value that every reader
// reads alike, or nil: it must be valid JSON and valid UTF-8, with no
// \u escape of half a surrogate pair (Go reads one as U+FFFD, JavaScript
// keeps it), no object naming a member twice at any depth (readers keep
// the first, the last, or both), no member name holding a \u0000 (which
// ends it for some readers), and no deeper than MaxJSONDepth. What
// passes is read the same way by the gateway that checks it and by the
// client it is forwarded to. The error's message is a phrase that reads
// after the name of what was checked ("args: …").
func CheckStrictJSON(raw []byte) error {
	_, err := CheckStrictJSONValues(raw)
	return err
}

// bodyDepth is the nesting a request body may add above MaxJSONDepth: the
// levels of its own envelope around args, metadata or messages.
const bodyDepth = 8

// CheckStrictJSONBody is CheckStrictJSON for a whole request body (the
// envelope around a call's args, a session's metadata, a run's
// messages): the same checks, with room for the envelope's own levels
// above MaxJSONDepth, so that a value inside it that nests too deeply is
// refused by that value's own check, naming it.
func CheckStrictJSONBody(raw []byte) error {
	_, err := walkJSONText(raw, MaxJSONDepth+bodyDepth, 0)
	return err
}

// CheckStrictJSONValues is CheckStrictJSON that also returns the number
// of values raw holds (objects, arrays, strings, numbers, true, false and
// null; member names are not values), counted in the same pass: what a
// schema validation of raw visits.
func CheckStrictJSONValues(raw []byte) (int, error) {
	return walkJSONText(raw, MaxJSONDepth, 0)
}

// checkJSONText runs CheckStrictJSON's checks with the given nesting
// limit and, when maxNodes is positive, a limit on the number of objects
// and arrays. Its cost is one pass over raw (two while raw is valid).
func checkJSONText(raw []byte, maxDepth, maxNodes int) error {
	_, err := walkJSONText(raw, maxDepth, maxNodes)
	return err
}

// walkJSONText is checkJSONText, returning the number of values of raw.
func walkJSONText(raw []byte, maxDepth, maxNodes int) (int, error) {
	return walkJSONTextFor(raw, maxDepth, maxNodes, nil)
}

// walkJSONTextFor is walkJSONText that also holds member names to root,
// the names of what raw is read into (CheckStrictJSONBodyFor).
func walkJSONTextFor(raw []byte, maxDepth, maxNodes int, root *nameSet) (int, error) {
	if !json.Valid(raw) {
		return 0, errors.New(syntaxErrorMessage(raw))
	}
	if !utf8.Valid(raw) {
		return 0, fmt.Errorf("is not valid UTF-8 (at byte %d)", firstInvalidUTF8(raw))
	}
	var levels [16]jsonLevel
	var keys [32][]byte
	w := jsonWalk{raw: raw, maxDepth: maxDepth, maxNodes: maxNodes, stack: levels[:0], keys: keys[:0], root: root}
	if err := w.run(); err != nil {
		return 0, err
	}
	return w.values, nil
}

// syntaxErrorMessage says what is wrong with text json.Valid refused.
func syntaxErrorMessage(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var v json.RawMessage
	err := dec.Decode(&v)
	if err == nil {
		if _, next := dec.Token(); next != io.EOF {
			return "is not JSON: invalid character after top-level value"
		}
		return "is not JSON"
	}
	return "is not JSON: " + err.Error()
}

// firstInvalidUTF8 returns the offset of raw's first byte that is not
// part of a valid UTF-8 sequence.
func firstInvalidUTF8(raw []byte) int {
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(raw)
}

// jsonWalk is one pass over a JSON text already known to be valid: it
// tracks the nesting, counts objects and arrays, and remembers each open
// object's member names.
type jsonWalk struct {
	raw      []byte
	maxDepth int
	maxNodes int
	nodes    int
	values   int // objects, arrays and scalars (not member names)
	stack    []jsonLevel
	// keys are the member names of the open objects, outermost first:
	// those of stack[i] start at stack[i].keyStart. A name is a slice of
	// raw unless it has escapes.
	keys [][]byte
	root *nameSet // the names the top-level value reads (nil: any)
}

// jsonLevel is an open object or array.
type jsonLevel struct {
	object   bool
	index    int                 // an array's element index
	keyStart int                 // where an object's names start in keys
	set      map[string]struct{} // an object's names, once there are many
	names    *nameSet            // the names this level reads (nil: any)
	member   *nameSet            // the names its current member's value reads
}

// manyKeys is the number of members past which an object's names are
// looked up in a map rather than a list.
const manyKeys = 16

func (w *jsonWalk) run() error {
	raw := w.raw
	expectKey := false
	for i := 0; i < len(raw); {
		switch raw[i] {
		case '{', '[':
			if len(w.stack) >= w.maxDepth {
				return fmt.Errorf("nests objects and arrays deeper than %d levels", w.maxDepth)
			}
			w.nodes++
			w.values++
			if w.maxNodes > 0 && w.nodes > w.maxNodes {
				return fmt.Errorf("has more than %d objects and arrays", w.maxNodes)
			}
			w.push(raw[i] == '{')
			expectKey = raw[i] == '{'
			i++
		case '}', ']':
			w.keys = w.keys[:w.stack[len(w.stack)-1].keyStart]
			w.stack = w.stack[:len(w.stack)-1]
			expectKey = false
			i++
		case ',':
			if top := &w.stack[len(w.stack)-1]; top.object {
				expectKey = true
			} else {
				top.index++
			}
			i++
		case '"':
			end, escaped, err := scanJSONString(raw, i)
			if err != nil && expectKey {
				return fmt.Errorf("%s in a member name of %s", err, objectAt(w.stack[:len(w.stack)-1], w.keys[:w.stack[len(w.stack)-1].keyStart]))
			}
			if err != nil {
				return fmt.Errorf("%s at %s", err, pointerOf(w.stack, w.keys))
			}
			if expectKey {
				expectKey = false
				if err := w.addKey(raw[i:end+1], escaped); err != nil {
					return err
				}
			} else {
				w.values++
			}
			i = end + 1
		case ' ', '\t', '\n', '\r', ':':
			i++
		default:
			// A number or a literal: it runs to the next delimiter.
			w.values++
			for i++; i < len(raw); i++ {
				if c := raw[i]; c == ',' || c == ']' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
					break
				}
			}
		}
	}
	return nil
}

// push opens an object or an array.
func (w *jsonWalk) push(object bool) {
	names := w.root
	if n := len(w.stack); n > 0 {
		if parent := &w.stack[n-1]; parent.object {
			names = parent.member
		} else if parent.names != nil {
			names = parent.names.elem
		}
	}
	w.stack = append(w.stack, jsonLevel{object: object, keyStart: len(w.keys), names: names})
}

// addKey records the member name quoted (a JSON string, escaped or not) in
// the innermost object, and refuses one it already has.
func (w *jsonWalk) addKey(quoted []byte, escaped bool) error {
	name := quoted[1 : len(quoted)-1]
	if escaped {
		var s string
		if err := json.Unmarshal(quoted, &s); err != nil {
			return fmt.Errorf("is not JSON: %v", err)
		}
		name = []byte(s)
	}
	top := &w.stack[len(w.stack)-1]
	if bytes.IndexByte(name, 0) >= 0 {
		// A reader that ends a name at NUL (C, and what is built on it)
		// would read "a\u0000" and "a" as one name twice.
		return fmt.Errorf("has a \\u0000 in a member name of %s", objectAt(w.stack[:len(w.stack)-1], w.keys[:top.keyStart]))
	}
	if top.names != nil {
		member, folded := top.names.member(name)
		if folded != "" {
			return fmt.Errorf("names the member %s in %s: member names are case-sensitive (did you mean %s?)",
				strconv.Quote(string(name)), objectAt(w.stack[:len(w.stack)-1], w.keys[:top.keyStart]), strconv.Quote(folded))
		}
		top.member = member
	}
	names := w.keys[top.keyStart:]
	dup := false
	if top.set != nil {
		_, dup = top.set[string(name)]
	} else {
		for _, k := range names {
			if bytes.Equal(k, name) {
				dup = true
				break
			}
		}
	}
	if dup {
		return fmt.Errorf("names the member %s twice in %s", strconv.Quote(string(name)), objectAt(w.stack[:len(w.stack)-1], w.keys[:top.keyStart]))
	}
	w.keys = append(w.keys, name)
	if top.set != nil {
		top.set[string(name)] = struct{}{}
	} else if len(names)+1 > manyKeys {
		top.set = make(map[string]struct{}, 2*manyKeys)
		for _, k := range w.keys[top.keyStart:] {
			top.set[string(k)] = struct{}{}
		}
	}
	return nil
}

// objectAt names the object whose enclosing levels are outer (keys are
// their member names, up to the object's own).
func objectAt(outer []jsonLevel, keys [][]byte) string {
	if len(outer) == 0 {
		return "the top-level object"
	}
	return "the object at " + pointerOf(outer, keys)
}

// pointerOf is the JSON Pointer of the value being read inside levels.
// The top-level value's pointer is empty, written as a pair of single
// quotes (as the schema validator writes it).
func pointerOf(levels []jsonLevel, keys [][]byte) string {
	var b strings.Builder
	for i, l := range levels {
		b.WriteByte('/')
		if l.object {
			end := len(keys) // the object's names end where the next level's start
			if i+1 < len(levels) {
				end = levels[i+1].keyStart
			}
			if end > l.keyStart {
				b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(string(keys[end-1])))
			}
		} else {
			b.WriteString(strconv.Itoa(l.index))
		}
	}
	if b.Len() == 0 {
		return "''"
	}
	return b.String()
}

// scanJSONString reads the string that starts with the quote at raw[start]
// of a valid JSON text. It returns the index of its closing quote and
// whether it holds escapes, and refuses a \u escape of half a surrogate
// pair.
func scanJSONString(raw []byte, start int) (end int, escaped bool, err error) {
	for i := start + 1; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			return i, escaped, nil
		case '\\':
			escaped = true
			i++
			if i >= len(raw) || raw[i] != 'u' {
				continue // a one-letter escape
			}
			r := hex4(raw, i+1)
			i += 4
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00: // the first half: the second must follow
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if low := hex4(raw, i+3); low >= 0xDC00 && low <= 0xDFFF {
						i += 6
						continue
					}
				}
				return 0, false, fmt.Errorf("has a \\u escape of half a surrogate pair")
			case utf16.IsSurrogate(r):
				return 0, false, fmt.Errorf("has a \\u escape of half a surrogate pair")
			}
		}
	}
	return 0, false, errors.New("is not JSON: unterminated string")
}

// hex4 is the value of the four hex digits at raw[i:i+4] (-1 past the end).
func hex4(raw []byte, i int) rune {
	if i+4 > len(raw) {
		return -1
	}
	var v rune
	for _, c := range raw[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return v
}
