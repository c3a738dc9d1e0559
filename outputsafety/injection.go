package outputsafety

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// injectionRules are the kinds of injection attempt looked for, each
// found from the words it starts with. They are written for normalised
// text (see normalize): lowercase ASCII letters; a space in a rule is any
// one space or newline.
var injectionRules = []rule{
	requiring(injectionRule("ignore_instructions", `(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?|overrid(?:e|ing)|bypass(?:ing)?)\b(?: [\w']+){0,4}? (?:instructions?|prompts?|directives?|guidelines|guardrails|system (?:message|prompt))\b`,
		"ignore", "ignoring", "disregard", "disregarding", "forget", "forgetting", "override", "overriding", "bypass", "bypassing"), "instruction", "prompt", "directive", "guideline", "guardrail", "message"),
	requiring(injectionRule("disregard_above", `(?:ignore|disregard|forget) (?:all |everything |anything )?(?:(?:that |you were |was )?(?:said|told|written|stated) )?(?:above|before this|previously|so far)\b`,
		"ignore", "disregard", "forget"), "above", "before", "previously", "so far"),
	requiring(injectionRule("role_change", `you are (?:now|no longer)\b|from now on,? you\b|pretend (?:to be|you are)\b|act as (?:an? )?(?:unrestricted|unfiltered|jailbroken)\b`,
		"you", "from", "pretend", "act"), "now", "longer", "pretend", "act as"),
	requiring(injectionRule("new_instructions", `(?:new|updated|revised|real|actual|additional|secret|hidden) (?:instructions?|system prompt|directives?|orders) ?:`,
		"new", "updated", "revised", "real", "actual", "additional", "secret", "hidden"), "instruction", "prompt", "directive", "order"),
	requiring(injectionRule("new_instructions", `instructions? (?:for|to) (?:the )?(?:ai|assistant|model|llm|agent|chatbot)\b`, "instruction", "instructions"), "ai", "assistant", "model", "llm", "agent", "chatbot"),
	requiring(injectionRule("system_prompt", `(?:system|initial) prompt\b|hidden instructions\b|developer message\b`, "system", "initial", "hidden", "developer"), "prompt", "instructions", "message"),
	within(requiring(lineStartRule(injectionRule("role_marker", `(?:system|assistant|developer) ?:`, "system", "assistant", "developer")), ":"), 16),
	within(requiring(lineStartRule(injectionRule("role_marker", `#{2,} ?(?:instructions?|system|assistant|response)\b`, "##")), "instruction", "system", "assistant", "response"), 40),
	within(requiring(injectionRule("chat_template_token", `<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\|>`, "<|"), "|>"), 24),
	injectionRule("chat_template_token", `\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>`, "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "<start_of_turn>", "<end_of_turn>"),
	within(requiring(injectionRule("fake_tool_result_end", `</(?:tool_results?|tool_output|tool_response|function_results?|function_output|tool_data|tool_call)>`, "</"), "tool", "function"), 24),
	requiring(injectionRule("fake_tool_result_end", `end of (?:the )?tool (?:output|result|data)\b`, "end"), "tool"),
	requiring(injectionRule("conceal_from_user", `(?:do not|don't|never) (?:tell|inform|mention|reveal|show|let on to) (?:this (?:to )?)?(?:the )?(?:user|human|operator)\b|without (?:telling|informing|asking) (?:the )?(?:user|human)\b`,
		"do", "don't", "never", "without"), "user", "human", "operator"),
	requiring(injectionRule("tool_call_directive", `(?:call|invoke|use|run|execute) (?:the )?(?:tool|function) [\w.-]+ (?:with|using|passing)\b|(?:call|invoke|run|execute) (?:the )?[\w.-]+ (?:tool|function) (?:with|using|passing|now)\b`,
		"call", "invoke", "use", "run", "execute"), "tool", "function"),
	requiring(injectionRule("addresses_the_model", `(?:attention|note|message|important) (?:to |for )?(?:the |all )?(?:ai|assistant|llm|language model|ai agent|chatbot)s? ?[:,!]|if you are an? (?:ai|llm|language model|assistant|ai agent)\b`,
		"attention", "note", "message", "important", "if"), "ai", "assistant", "llm", "language model", "chatbot"),
}

// injectionRule builds a rule for normalised text; its anchors that are
// words match whole words.
func injectionRule(name, expr string, anchors ...string) rule {
	return wholeWords(newRule(name, strings.ReplaceAll(expr, " ", `\s`), injectionWindow, anchors...))
}

// injectionWords is the word index of injectionRules.
var injectionWords = indexWords(injectionRules)

// within returns r with a shorter window, for a rule whose matches are
// short: the look for its required literals then costs less at each of
// its anchors.
func within(r rule, window int) rule {
	r.window = window
	return r
}

func lineStartRule(r rule) rule {
	r.lineStart = true
	return r
}

// injectionWindow bounds the text one injection match may span.
const injectionWindow = 160

// excerptContext is how much text a finding's excerpt shows on each side
// of the match; maxMatchExcerpt bounds the match's own part.
const (
	excerptContext  = 40
	maxMatchExcerpt = 120
)

// findInjections adds to rep the injection attempts in str.
func findInjections(str string, path func() string, rep *Report) {
	if len(str) < 4 {
		return
	}
	room := MaxFindings - len(rep.Findings)
	if room <= 0 {
		return
	}
	norm := normalize(str)
	found := findAll(injectionRules, injectionWords, norm, room)
	if len(found) == 0 {
		return
	}
	where := path()
	for _, m := range found {
		rep.Findings = append(rep.Findings, Finding{Pattern: m.rule.name, Path: where, Excerpt: excerpt(norm, m.start, m.end)})
	}
}

// excerpt is the text around norm[start:end], bounded, cut at rune
// boundaries.
func excerpt(norm string, start, end int) string {
	if end-start > maxMatchExcerpt {
		end = start + maxMatchExcerpt
	}
	from, to := start-excerptContext, end+excerptContext
	if from < 0 {
		from = 0
	}
	if to > len(norm) {
		to = len(norm)
	}
	for from > 0 && !utf8.RuneStart(norm[from]) {
		from--
	}
	for to < len(norm) && !utf8.RuneStart(norm[to]) {
		to++
	}
	s := strings.TrimSpace(norm[from:to])
	if from > 0 {
		s = "…" + s
	}
	if to < len(norm) {
		s += "…"
	}
	return s
}

// normalize folds the text the patterns are matched against: lowercase;
// zero-width, bidi and other format characters and combining marks
// dropped; fullwidth forms, mathematical letters and the common Cyrillic
// and Greek look-alikes folded to ASCII; curly quotes made straight; a
// run of spaces made one space, or one newline when it holds one.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := byte(0) // pending ' ' or '\n'
	flushSpace := func() {
		if space != 0 {
			b.WriteByte(space)
			space = 0
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '\n' || c == '\r':
				space = '\n'
				continue
			case c == ' ' || c == '\t' || c == '\v' || c == '\f':
				if space == 0 {
					space = ' '
				}
				continue
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			}
			flushSpace()
			b.WriteByte(c)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		r = foldRune(r)
		switch {
		case r < 0:
			continue // dropped
		case unicode.IsSpace(r):
			if r == '\u2028' || r == '\u2029' || r == '\u0085' {
				space = '\n'
			} else if space == 0 {
				space = ' '
			}
			continue
		}
		flushSpace()
		b.WriteRune(r)
	}
	flushSpace()
	return b.String()
}

// foldRune maps one non-ASCII rune to what the patterns see: an ASCII
// letter for a look-alike, -1 for a rune that is dropped.
func foldRune(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E: // fullwidth ASCII
		return unicode.ToLower(r - 0xFEE0)
	case r >= 0x1D400 && r <= 0x1D6A3: // mathematical alphanumeric letters, 52 to a style
		k := (r - 0x1D400) % 52
		if k < 26 {
			return 'a' + k
		}
		return 'a' + k - 26
	case r == '\u2018' || r == '\u2019' || r == '\u02BC' || r == '\u2032':
		return '\''
	case r == '\u201C' || r == '\u201D':
		return '"'
	case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		return -1 // zero-width, bidi, soft hyphen, variation selectors, combining marks
	}
	if a, ok := lookAlikes[r]; ok {
		return a
	}
	return unicode.ToLower(r)
}

// lookAlikes are the Cyrillic and Greek letters that look like ASCII
// ones, the cheap way to spell "ignore" so that a plain search misses it.
var lookAlikes = map[rune]rune{
	'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'і': 'i', 'ѕ': 's', 'ј': 'j', 'ԁ': 'd', 'һ': 'h', 'ԛ': 'q', 'ԝ': 'w',
	'А': 'a', 'В': 'b', 'Е': 'e', 'К': 'k', 'М': 'm', 'Н': 'h', 'О': 'o', 'Р': 'p', 'С': 'c', 'Т': 't', 'У': 'y', 'Х': 'x', 'І': 'i', 'Ѕ': 's', 'Ј': 'j',
	'α': 'a', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
	'Α': 'a', 'Β': 'b', 'Ε': 'e', 'Ζ': 'z', 'Η': 'h', 'Ι': 'i', 'Κ': 'k', 'Μ': 'm', 'Ν': 'n', 'Ο': 'o', 'Ρ': 'p', 'Τ': 't', 'Υ': 'y', 'Χ': 'x',
}
