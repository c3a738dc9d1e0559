package outputsafety_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/outputsafety"
)

// updateDoc rewrites the table in docs/output-safety.md from the corpus.
var updateDoc = flag.Bool("update-doc", false, "rewrite the redaction table in docs/output-safety.md")

// corpusEntry is one sample of testdata/corpus.json: a tool's output and
// what must not come out of the safety step (secrets), or whether it must
// be flagged (injection), or come out unchanged (negative).
type corpusEntry struct {
	Group   string          `json:"group"` // credential, evasion, injection, negative
	Class   string          `json:"class"`
	Input   json.RawMessage `json:"input"`
	Secrets []string        `json:"secrets"`
}

// caught reports whether the safety step did to the entry what its group
// asks: removed every secret, flagged the injection, or (a negative) left
// it as it was.
func (e corpusEntry) caught(s *outputsafety.Sanitizer) bool {
	out, rep := s.Sanitize(e.Input, outputsafety.ModeFull)
	switch e.Group {
	case "injection":
		return rep.Flagged()
	case "negative":
		return string(out) == string(e.Input) && rep.Redacted == 0 && !rep.Flagged()
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return false
	}
	text := strings.Join(stringsOf(v), "\n")
	for _, sec := range e.Secrets {
		if strings.Contains(text, sec) {
			return false
		}
	}
	return true
}

// stringsOf lists the strings of a decoded JSON value, keys included.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, stringsOf(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range v {
			out = append(append(out, k), stringsOf(e)...)
		}
		return out
	}
	return nil
}

const (
	docPath    = "../docs/output-safety.md"
	tableBegin = "<!-- redaction corpus table: outputsafety/corpus_test.go writes it (go test ./outputsafety -run TestRedactionCorpus -update-doc) -->"
	tableEnd   = "<!-- end of the redaction corpus table -->"
)

// TestRedactionCorpus runs the safety step over testdata/corpus.json and
// computes, per class, how many samples it catches. Every credential
// shape must be caught in every sample and every negative left alone;
// the table in docs/output-safety.md must be the one the corpus gives
// now, so that it never claims what the code does not do.
func TestRedactionCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var corpus []corpusEntry
	if err := json.Unmarshal(raw, &corpus); err != nil {
		t.Fatal(err)
	}
	s := outputsafety.New()
	type tally struct {
		group, class  string
		caught, total int
	}
	var rows []*tally
	byClass := map[string]*tally{}
	for _, e := range corpus {
		row := byClass[e.Class]
		if row == nil {
			row = &tally{group: e.Group, class: e.Class}
			byClass[e.Class] = row
			rows = append(rows, row)
		}
		row.total++
		ok := e.caught(s)
		if ok {
			row.caught++
		}
		notCaught := strings.HasSuffix(e.Class, "(not caught)")
		switch {
		case e.Group == "negative" && !ok:
			out, rep := s.Sanitize(e.Input, outputsafety.ModeFull)
			t.Errorf("negative %s changed: %s → %s (findings %v)", e.Class, e.Input, out, rep.Findings)
		case e.Group != "negative" && !ok && !notCaught:
			out, _ := s.Sanitize(e.Input, outputsafety.ModeFull)
			t.Errorf("%s %q not caught: %s → %s", e.Group, e.Class, e.Input, out)
		case e.Group != "negative" && ok && notCaught:
			t.Errorf("%s %q is caught now: move it out of the \"not caught\" classes", e.Group, e.Class)
		}
	}
	var b strings.Builder
	b.WriteString("| Kind | Class | Caught | Rate |\n| --- | --- | --- | --- |\n")
	for _, r := range rows {
		what := map[string]string{"credential": "credential", "evasion": "evasion", "injection": "injection (flagged)", "negative": "left alone"}[r.group]
		fmt.Fprintf(&b, "| %s | %s | %d of %d | %d %% |\n", what, r.class, r.caught, r.total, 100*r.caught/r.total)
	}
	table := b.String()
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), tableBegin+"\n")
	_, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the table's markers", docPath)
	}
	want := before + tableBegin + "\n" + table + tableEnd + after
	if *updateDoc {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != string(doc) {
		t.Errorf("the table in %s is not what the corpus gives now; run go test ./outputsafety -run TestRedactionCorpus -update-doc. It should read:\n%s", docPath, table)
	}
}

// TestKnownSecretWithLookAlikesRedacted: a known secret with look-alike
// letters (a Cyrillic а for the a), fullwidth letters or invisible
// characters put in it is still the secret.
func TestKnownSecretWithLookAlikesRedacted(t *testing.T) {
	s := newSanitizer()
	for _, in := range []string{
		"key " + strings.Replace(agentKey, "a", "\u0430", 1) + " end",
		"key " + strings.Replace(agentKey, "Z", "\uff3a", 1) + " end",
		"key " + agentKey[:10] + "\u200b\u0445" + agentKey[11:] + " end", // a Cyrillic х for the x
	} {
		for _, mode := range []outputsafety.Mode{outputsafety.ModeFull, outputsafety.ModeSecretsOnly} {
			if got, _ := text(t, s, in, mode); got != "key [REDACTED:agent_key] end" {
				t.Errorf("mode %d: %q → %q", mode, in, got)
			}
		}
	}
}
