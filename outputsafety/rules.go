package outputsafety

import (
	"regexp"
	"sort"
	"strings"
)

// rule is one pattern, found from a literal anchor: every place the
// anchor occurs is tried with the rule's regular expression, anchored
// there (^) and given at most window bytes. A search from anchors costs a
// few strings.Index scans and, per occurrence, a match that stops as soon
// as the text stops fitting; running the expressions over the whole text
// instead costs Go's regexp a pass of its slowest engine (about 1 MB/s
// for these alternations).
type rule struct {
	name    string
	anchors []string // literals the match starts with (lowercase when the rule set folds case)
	re      *regexp.Regexp
	// words are anchors matched as whole words, found by one word scan
	// of the text (see wholeWords, indexWords).
	words []string
	// word requires an anchor that begins with a letter or digit to start
	// a word; lineStart requires it to start a line (after at most one
	// space); sentenceStart a line or a sentence (atSentenceStart).
	word, lineStart, sentenceStart bool
	window                         int
	// requires, when set, lists literals one of which every match holds:
	// a window holding none is not tried (a cheap look that keeps text
	// full of anchors from costing a regexp try at each).
	requires []string
}

// firstTryWindow is the window of a rule's first try at an anchor.
const firstTryWindow = 128

// match is one place a rule matched: the span to act on (the first of
// its groups that took part when the expression has groups, else the
// whole match).
type match struct {
	rule       *rule
	start, end int
	group      int // the group the span is, from 1; 0 for the whole match
}

// newRule compiles a rule; expr is written to match at the anchor and
// gets its ^ here.
func newRule(name, expr string, window int, anchors ...string) rule {
	return rule{name: name, anchors: anchors, re: regexp.MustCompile(`^(?:` + expr + `)`), window: window, word: true}
}

// wordAnchors maps the whole-word anchors of a rule set to their rules: the text is then read once, word by word,
// instead of once per anchor.
type wordAnchors map[string][]*rule

// indexWords returns the whole-word anchors of rules.
func indexWords(rules []rule) wordAnchors {
	m := wordAnchors{}
	for i := range rules {
		r := &rules[i]
		for _, a := range r.words {
			m[a] = append(m[a], r)
		}
	}
	return m
}

// wholeWords returns r with its anchors that are words matching whole
// words only, found by one word scan (indexWords).
func wholeWords(r rule) rule {
	var others []string
	for _, a := range r.anchors {
		if isWordAnchor(a) {
			r.words = append(r.words, a)
		} else {
			others = append(others, a)
		}
	}
	r.anchors = others
	return r
}

// isWordAnchor reports whether a is one word as the word scan reads it
// (letters, digits, _ and ').
func isWordAnchor(a string) bool {
	for i := 0; i < len(a); i++ {
		if !isWordByte(a[i]) && a[i] != '\'' {
			return false
		}
	}
	return a != ""
}

// findAll returns the rules' matches in text, ordered by start, without
// overlaps (the earlier, then longer, wins); at most limit of them
// (limit 0: all). words is indexWords(rules), nil when no rule has
// whole-word anchors.
func findAll(rules []rule, words wordAnchors, text string, limit int) []match {
	var found []match
	full := func() bool { return limit > 0 && len(found) >= 4*limit }
	// try tries r at pos and returns where the search for r goes on.
	try := func(r *rule, pos int) int {
		if r.lineStart && !atLineStart(text, pos) || r.sentenceStart && !atSentenceStart(text, pos) {
			return pos + 1
		}
		if !holdsAny(text[pos:min(pos+r.window, len(text))], r.requires) {
			return pos + 1
		}
		// A first try in a short window: most tries fail within a few
		// bytes, and Go's regexp clears state in proportion to the input
		// it is given. A match reaching the short window's end is tried
		// again in the whole window.
		end := min(pos+min(r.window, firstTryWindow), len(text))
		loc := r.re.FindStringSubmatchIndex(text[pos:end])
		if loc != nil && pos+loc[1] == end && r.window > firstTryWindow {
			loc = r.re.FindStringSubmatchIndex(text[pos:min(pos+r.window, len(text))])
		}
		if loc == nil {
			return pos + 1
		}
		s, e, group := loc[0], loc[1], 0
		for g := 2; g+1 < len(loc); g += 2 { // the first group that took part
			if loc[g] >= 0 {
				s, e, group = loc[g], loc[g+1], g/2
				break
			}
		}
		found = append(found, match{rule: r, start: pos + s, end: pos + e, group: group})
		return pos + max(loc[1], 1)
	}
	if len(words) > 0 {
		for i := 0; i < len(text) && !full(); {
			if !isWordByte(text[i]) || i > 0 && isWordByte(text[i-1]) {
				i++
				continue
			}
			j := i
			for j < len(text) && (isWordByte(text[j]) || text[j] == '\'') {
				j++
			}
			for _, r := range words[text[i:j]] {
				try(r, i)
			}
			i = j
		}
	}
	for i := range rules {
		r := &rules[i]
		for _, anchor := range r.anchors {
			for from := 0; from < len(text) && !full(); {
				k := strings.Index(text[from:], anchor)
				if k < 0 {
					break
				}
				pos := from + k
				if r.word && pos > 0 && isWordByte(text[pos-1]) && isWordByte(anchor[0]) {
					from = pos + 1
					continue
				}
				from = try(r, pos)
			}
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].start != found[j].start {
			return found[i].start < found[j].start
		}
		return found[i].end > found[j].end
	})
	out := found[:0]
	for _, m := range found {
		if len(out) > 0 && m.start < out[len(out)-1].end {
			continue
		}
		out = append(out, m)
		if len(out) == limit {
			break
		}
	}
	return out
}

// holdsAny reports whether s holds one of subs; true when subs is empty.
func holdsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return len(subs) == 0
}

// requiring returns r with its required literals.
func requiring(r rule, subs ...string) rule {
	r.requires = subs
	return r
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// atLineStart reports whether pos starts a line, after at most one space.
func atLineStart(text string, pos int) bool {
	if pos > 0 && text[pos-1] == ' ' {
		pos--
	}
	return pos == 0 || text[pos-1] == '\n'
}

// atSentenceStart reports whether pos starts a line or a sentence (after
// at most one space): the text's start, or after a newline, a sentence's
// end (. ! ?), a colon or semicolon, a quote, a bracket, or the - or >
// that end markup such as <!-- or a list item.
func atSentenceStart(text string, pos int) bool {
	if pos > 0 && text[pos-1] == ' ' {
		pos--
	}
	return pos == 0 || strings.IndexByte("\n.!?:;\"'([{<>*-", text[pos-1]) >= 0
}

// asciiLower lowercases the ASCII letters of s alone, so offsets in the
// result are offsets in s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
