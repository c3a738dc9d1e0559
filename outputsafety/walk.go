package outputsafety

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// walker copies a valid JSON text, passing every string (object keys too)
// through visit: only strings visit changes are re-encoded, everything
// else — whitespace, numbers, the order of members — is copied as it is.
type walker struct {
	in []byte
	// visit gets the string, whether it is a key, whether it lies inside
	// a member whose key names a secret, and its JSON path (built only
	// when called: a finding is rare, and building every string's path
	// would cost the depth each time).
	visit func(str string, isKey, underSecret bool, path func() string) string

	out   []byte
	stack []frame
}

// frame is one open object or array.
type frame struct {
	object    bool
	expectKey bool   // in an object: the next string is a key
	key       string // in an object: the current member's key (redacted)
	secret    bool   // in an object: the current member's key names a secret
	index     int    // in an array: the current element's index
}

// run walks w.in (which must be valid JSON) and returns the copy.
func (w *walker) run() []byte {
	in := w.in
	w.out = make([]byte, 0, len(in)+64)
	secretDepth := 0 // open members whose key names a secret
	for i := 0; i < len(in); {
		c := in[i]
		switch c {
		case '{', '[':
			w.stack = append(w.stack, frame{object: c == '{', expectKey: c == '{'})
			w.out = append(w.out, c)
			i++
		case '}', ']':
			if top := w.top(); top != nil && top.secret {
				secretDepth--
			}
			w.stack = w.stack[:len(w.stack)-1]
			w.out = append(w.out, c)
			i++
		case ',':
			if top := w.top(); top != nil {
				if top.object {
					if top.secret {
						secretDepth--
					}
					top.expectKey, top.secret = true, false
				} else {
					top.index++
				}
			}
			w.out = append(w.out, c)
			i++
		case ':':
			if top := w.top(); top != nil {
				top.expectKey = false
			}
			w.out = append(w.out, c)
			i++
		case '"':
			end := stringEnd(in, i)
			raw := in[i:end]
			str := decodeString(raw)
			top := w.top()
			isKey := top != nil && top.object && top.expectKey
			got := w.visit(str, isKey, secretDepth > 0, func() string { return w.path(isKey, str) })
			if got == str {
				w.out = append(w.out, raw...)
			} else {
				w.out = appendString(w.out, got)
			}
			if isKey {
				top.key = got
				top.secret = namesSecret(str)
				if top.secret {
					secretDepth++
				}
			}
			i = end
		default:
			j := i + 1
			for j < len(in) && !isDelimiter(in[j]) {
				j++
			}
			w.out = append(w.out, in[i:j]...)
			i = j
		}
	}
	return w.out
}

func (w *walker) top() *frame {
	if len(w.stack) == 0 {
		return nil
	}
	return &w.stack[len(w.stack)-1]
}

// isDelimiter reports whether c ends a number or literal.
func isDelimiter(c byte) bool {
	switch c {
	case '{', '}', '[', ']', ',', ':', '"':
		return true
	}
	return false
}

// path is the JSON path of the string being visited: the member's for a
// key, the value's otherwise; at most maxPathLength bytes, the deepest
// part kept.
func (w *walker) path(isKey bool, key string) string {
	var b strings.Builder
	b.WriteByte('$')
	for n, f := range w.stack {
		last := n == len(w.stack)-1
		if f.object {
			k := f.key
			if last && isKey {
				k = key
			} else if last && f.expectKey {
				break
			}
			if isIdentifier(k) {
				b.WriteByte('.')
				b.WriteString(k)
			} else {
				b.WriteByte('[')
				b.WriteString(strconv.Quote(k))
				b.WriteByte(']')
			}
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
		}
	}
	p := b.String()
	if len(p) > maxPathLength {
		cut := len(p) - maxPathLength
		for cut < len(p) && !utf8.RuneStart(p[cut]) {
			cut++
		}
		p = "$…" + p[cut:]
	}
	return p
}

// maxPathLength bounds a finding's path.
const maxPathLength = 200

func isIdentifier(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// stringEnd returns the index just past the JSON string starting at i.
func stringEnd(in []byte, i int) int {
	for j := i + 1; j < len(in); j++ {
		switch in[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(in)
}

// decodeString decodes a JSON string literal.
func decodeString(raw []byte) string {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(body)
	}
	return s
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(out []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(out, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}
