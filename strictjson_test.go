package toolgate_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
)

// TestCheckStrictJSON pins what a call's args may be: what every JSON
// reader reads alike, and each refusal's message.
func TestCheckStrictJSON(t *testing.T) {
	cases := []struct {
		name, raw string
		want      string // "" when accepted
	}{
		{"an object", `{"text":"hi","n":[1,2,{"a":null}]}`, ""},
		{"a scalar", `"x"`, ""},
		{"one name in two objects", `{"a":{"a":1},"b":{"a":2}}`, ""},
		{"names that differ only in case", `{"a":1,"A":2}`, ""},
		{"a surrogate pair escaped", `{"face":"\ud83d\ude00"}`, ""},
		{"text in UTF-8", `{"café":"naïve 😀"}`, ""},
		{"an object with many members", `{` + members(40, "") + `}`, ""},
		{"a duplicate at the top", `{"a":1,"b":2,"a":3}`, `names the member "a" twice in the top-level object`},
		{"a duplicate deep down", `{"x":[0,{"y":{"k":1,"k":2}}]}`, `names the member "k" twice in the object at /x/1/y`},
		{"a duplicate spelled with an escape", `{"u":1,"\u0075":2}`, `names the member "u" twice in the top-level object`},
		{"a duplicate among many members", `{` + members(40, `,"m7":0`) + `}`, `names the member "m7" twice in the top-level object`},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", "is not valid UTF-8 (at byte 6)"},
		{"a lone high surrogate", `{"a":"x\ud83d"}`, `has a \u escape of half a surrogate pair at /a`},
		{"a high surrogate before another escape", `["\ud83d\n"]`, `has a \u escape of half a surrogate pair at /0`},
		{"a lone low surrogate", `{"a":["\ude00"]}`, `has a \u escape of half a surrogate pair at /a/0`},
		{"half a pair in a name", `{"o":{"\ud800":1}}`, `has a \u escape of half a surrogate pair in a member name of the object at /o`},
		{"names that differ after a NUL", `{"a\u0000":1,"a":2}`, `has a \u0000 in a member name of the top-level object`},
		{"a NUL in a name deep down", `{"x":{"\u0000":1}}`, `has a \u0000 in a member name of the object at /x`},
		{"a NUL in a string value", `{"a":"x\u0000y"}`, ""},
		{"not JSON", `{"a":`, "is not JSON: unexpected EOF"},
		{"two values", `{} {}`, "is not JSON: invalid character after top-level value"},
		{"nested at the limit", nest(toolgate.MaxJSONDepth), ""},
		{"nested past the limit", nest(toolgate.MaxJSONDepth + 1), "nests objects and arrays deeper than 128 levels"},
	}
	for _, c := range cases {
		err := toolgate.CheckStrictJSON([]byte(c.raw))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// members is n object members m0…, then extra.
func members(n int, extra string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"m` + strconv.Itoa(i) + `":0`)
	}
	return b.String() + extra
}

// nest is depth arrays, one inside the other.
func nest(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// FuzzCheckStrictJSON: what CheckStrictJSON accepts is valid JSON in
// valid UTF-8, decodes to the same value whether the first or the last of
// a name's members would win (it has no duplicate), and keeps its strings
// as they are written (no escape Go would turn into U+FFFD).
func FuzzCheckStrictJSON(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1,"a":2}`, `{"u":1,"\u0075":2}`, `["\ud83d\ude00"]`, `"\ud800"`,
		"\"\xff\"", `[[[[1]]]]`, `{"a":{"b":[{"c":"d"}]}}`, `{"a":1} x`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if toolgate.CheckStrictJSON(raw) != nil {
			return
		}
		if !json.Valid(raw) || !utf8.Valid(raw) {
			t.Fatalf("accepted %q, which is not valid JSON in UTF-8", raw)
		}
		if dupKey(t, raw) {
			t.Fatalf("accepted %q, which names a member twice", raw)
		}
		if bytes.Contains(raw, []byte(`\u`)) {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			if s, _ := json.Marshal(v); bytes.Contains(s, []byte(`\ufffd`)) && !bytes.Contains(bytes.ToLower(raw), []byte(`\ufffd`)) {
				t.Fatalf("accepted %q, whose escapes Go reads as U+FFFD", raw)
			}
		}
	})
}

// dupKey is the reference the fuzz target checks against: any object of
// raw (valid JSON) with a member name twice, read with json.Decoder.
func dupKey(t *testing.T, raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type level struct {
		keys      map[string]bool
		expectKey bool
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{keys: map[string]bool{}, expectKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top != nil && top.keys != nil && top.expectKey {
				name := tok.(string)
				if top.keys[name] {
					return true
				}
				top.keys[name] = true
				top.expectKey = false
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].keys != nil {
			stack[len(stack)-1].expectKey = true
		}
	}
}

// BenchmarkCheckStrictJSON checks the arguments of a typical call.
func BenchmarkCheckStrictJSON(b *testing.B) {
	args := []byte(`{"text":"ping","count":3,"options":{"lang":"en","tags":["a","b"]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := toolgate.CheckStrictJSON(args); err != nil {
			b.Fatal(err)
		}
	}
}
