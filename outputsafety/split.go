package outputsafety

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// A secret split across neighbouring strings of one object or array —
// {"a": "sk-proj-4fTq9Zx", "b": "YwV8uT7sR6qP5oN4m"} — passes a search
// of each string alone. splitSecrets joins each pair of neighbouring
// string values (the end of the first, the start of the second) and
// looks there for a secret that crosses the join; both parts are then
// redacted where they lie. Splits into three or more parts, or across
// members that are not neighbours, are not looked for.

// splitWindow is how much of each side of a join is searched.
const splitWindow = 256

// cut is a part of a string (by its index among the output's strings,
// keys counted, in the walker's order) to redact: from start to end.
type cut struct {
	start, end int
	name       string
}

// splitSecrets returns the parts of split secrets in the valid JSON text
// in, by string index; nil when there are none.
func (s *Sanitizer) splitSecrets(in []byte, mode Mode) (cuts map[int][]cut, found int) {
	type last struct {
		index int
		text  string
		ok    bool // the previous value was a string
	}
	type frame struct {
		object, expectKey bool
		prev              last
	}
	var stack []frame
	index := 0
	valueSeen := func() { // a value that is not a string
		if n := len(stack); n > 0 {
			stack[n-1].prev.ok = false
		}
	}
	for i := 0; i < len(in); {
		switch c := in[i]; c {
		case '{', '[':
			valueSeen()
			stack = append(stack, frame{object: c == '{', expectKey: c == '{'})
			i++
		case '}', ']':
			stack = stack[:len(stack)-1]
			i++
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expectKey = true
			}
			i++
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].expectKey = false
			}
			i++
		case '"':
			end := stringEnd(in, i)
			n := len(stack)
			if n > 0 && !(stack[n-1].object && stack[n-1].expectKey) {
				f := &stack[n-1]
				str := decodeString(in[i:end])
				if f.prev.ok {
					for _, j := range s.acrossJoin(f.prev.text, str, mode) {
						if cuts == nil {
							cuts = map[int][]cut{}
						}
						cuts[f.prev.index] = append(cuts[f.prev.index], cut{start: j.start, end: len(f.prev.text), name: j.name})
						cuts[index] = append(cuts[index], cut{start: 0, end: j.end, name: j.name})
						found++
					}
				}
				f.prev = last{index: index, text: str, ok: true}
			}
			index++
			i = end
		default:
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				valueSeen()
			}
			j := i + 1
			for j < len(in) && !isDelimiter(in[j]) {
				j++
			}
			i = j
		}
	}
	return cuts, found
}

// joinFind is a secret found across a join: where it starts in the first
// string and ends in the second.
type joinFind struct {
	start, end int
	name       string
}

// acrossJoin returns the secrets that cross the join of a and b: a known
// secret within splitWindow bytes of the join, or a credential pattern's
// match in the run of credential characters (letters, digits and
// _-+/=.) that the join cuts, when that run is long enough to hold one.
func (s *Sanitizer) acrossJoin(a, b string, mode Mode) []joinFind {
	var out []joinFind
	cross := func(from int, head string, start, end int, name string) {
		if start < len(head) && end > len(head) {
			out = append(out, joinFind{start: from + start, end: end - len(head), name: name})
		}
	}
	if len(s.needles) > 0 {
		from := max(0, len(a)-splitWindow)
		for from < len(a) && !utf8.RuneStart(a[from]) {
			from++
		}
		to := min(len(b), splitWindow)
		for to < len(b) && !utf8.RuneStart(b[to]) {
			to++
		}
		head := a[from:]
		joined := head + b[:to]
		for _, nd := range s.needles {
			for at := 0; ; {
				k := strings.Index(joined[at:], nd.text)
				if k < 0 {
					break
				}
				cross(from, head, at+k, at+k+len(nd.text), nd.name)
				at += k + 1
			}
		}
	}
	if mode != ModeFull || len(out) > 0 {
		return out
	}
	from := len(a)
	for from > 0 && len(a)-from < splitWindow && isCredentialByte(a[from-1]) {
		from--
	}
	to := 0
	for to < len(b) && to < splitWindow && isCredentialByte(b[to]) {
		to++
	}
	if from == len(a) || to == 0 || len(a)-from+to < minSplitRun {
		return nil
	}
	head := a[from:]
	joined := head + b[:to]
	for _, m := range credentialSpans(joined) {
		cross(from, head, m.start, m.end, "credential")
	}
	return out
}

// minSplitRun is the shortest run of credential characters across a join
// that is searched: no credential shape is shorter.
const minSplitRun = 16

// isCredentialByte reports whether c may be part of a credential that
// has a shape (a token, a key in base64).
func isCredentialByte(c byte) bool {
	return isWordByte(c) || c == '-' || c == '+' || c == '/' || c == '=' || c == '.'
}

// applyCuts redacts the parts of str that cuts name; overlapping parts
// (a short string that both ends one split secret and starts the next)
// become one placeholder.
func applyCuts(str string, cuts []cut) string {
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].start < cuts[j].start })
	var b strings.Builder
	last := 0
	for _, c := range cuts {
		if c.end <= last {
			continue
		}
		if c.start >= last {
			b.WriteString(str[last:c.start])
			b.WriteString(placeholder(c.name))
		}
		last = min(c.end, len(str))
	}
	b.WriteString(str[last:])
	return b.String()
}
