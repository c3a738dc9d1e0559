package outputsafety_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/toolgate/toolgate/outputsafety"
)

// FuzzRedact: whatever the output, the safety step never panics, hands
// back valid JSON of the same shape (the same objects, arrays, numbers
// and literals, as many strings), and redacting its result again changes
// nothing.
func FuzzRedact(f *testing.F) {
	for _, seed := range []string{
		`"plain text"`, `{"a":"sk-proj-Ab3dEf6hIj9k","b":"Lm2nOp5qRs8tUv1wXy4z"}`, `["AKIAZZZZ","EXAMPLE7FAKE"]`,
		`{"password":"x","n":[1,2.5e3,true,null],"k":{"token":{"v":"y"}}}`, `"` + agentKey + `"`,
	} {
		f.Add([]byte(seed))
	}
	if raw, err := os.ReadFile("testdata/corpus.json"); err == nil {
		var corpus []corpusEntry
		if json.Unmarshal(raw, &corpus) == nil {
			for _, e := range corpus {
				f.Add([]byte(e.Input))
			}
		}
	}
	s := newSanitizer()
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		for _, mode := range []outputsafety.Mode{outputsafety.ModeFull, outputsafety.ModeSecretsOnly} {
			out, _ := s.Sanitize(in, mode)
			if !json.Valid(out) {
				t.Fatalf("mode %d: %q → %q, not JSON", mode, in, out)
			}
			if a, b := shapeOf(t, in), shapeOf(t, out); a != b {
				t.Fatalf("mode %d: %q → %q: shape %s became %s", mode, in, out, a, b)
			}
			if again, _ := s.Sanitize(out, mode); !bytes.Equal(again, out) {
				t.Fatalf("mode %d: %q → %q, then → %q", mode, in, out, again)
			}
		}
	})
}

// shapeOf is a JSON text's tokens with every string made "s" and every
// number kept.
func shapeOf(t *testing.T, in []byte) string {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var b bytes.Buffer
	for {
		tok, err := dec.Token()
		if err != nil {
			return b.String()
		}
		switch v := tok.(type) {
		case string:
			b.WriteString("s ")
		case json.Delim:
			b.WriteString(v.String() + " ")
		case json.Number:
			b.WriteString(v.String() + " ")
		default:
			b.WriteString(func() string { r, _ := json.Marshal(v); return string(r) }() + " ")
		}
	}
}
