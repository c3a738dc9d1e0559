package outputsafety

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// injectionRules are the kinds of injection attempt looked for, each
// found from the words it starts with. They are written for normalised
// text (see normalize): lowercase ASCII letters; a space in a rule is any
// one space or newline. Each needs words aimed at the model — an
// imperative about its instructions, a role for it, a chat turn — so that
// text about the same things ("## Instructions", "system: linux", "you
// are now logged in", "ignoring all interactive prompts") is left alone.
var injectionRules = slices.Concat(englishInjectionRules, chatTurnRules, foreignInjectionRules, toolPoisoningRules)

// englishInjectionRules are injectionRules in English.
var englishInjectionRules = []rule{
	// ignore/disregard/forget … previous/prior/above/your … instructions/directions/prompts/rules
	requiring(injectionRule("ignore_instructions", ignoreVerb+` (?:(?:all|any|every one) (?:of )?)?(?:`+
		`(?:(?:the|these|those|such|my|its|their) )?`+priorWord+`(?: (?:and|or|&) `+priorWord+`)? `+instructionNoun+
		`|your (?:own )?(?:`+priorWord+`(?: (?:and|or|&) `+priorWord+`)? )?`+instructionNoun+
		`|(?:the )?`+instructionNoun+` (?:above|before this|given (?:above|before|earlier|previously|to you)|you (?:were|have been) given|you received)`+
		`)\b|`+ignoreVerb+` all (?:of )?(?:the )?(?:instructions?|directions|directives?|guidelines|guardrails|system (?:messages?|prompts?))\b`,
		"ignore", "ignoring", "disregard", "disregarding", "forget", "forgetting", "override", "overriding", "bypass", "bypassing"),
		"instruction", "direction", "directive", "prompt", "guideline", "guardrail", "rule", "order", "command", "programming", "constraint", "restriction", "message", "context"),
	// ignore everything above. / disregard the above and …
	requiring(injectionRule("disregard_above", `(?:ignore|disregard|forget) (?:all |everything |anything )?(?:(?:that |you were |was )?(?:said|told|written|stated) )?(?:the )?(?:above|before this|previously|so far)(?:[.,;:!)]|\n| and\b| (?:it|this|that)\b|$)`,
		"ignore", "disregard", "forget"), "above", "before", "previously", "so far"),
	// a new role for the model
	requiring(injectionRule("role_change", `you are (?:now|no longer|from now on),? (?:an? |the |my |in )?(?:`+
		`(?:new |unrestricted |unfiltered |uncensored |jailbroken |evil )?(?:ai|assistant|ai agent|llm|chatbot|language model)\b|dan\b|(?:unrestricted|unfiltered|uncensored|jailbroken|evil)\b|`+
		`(?:developer|god|dan|jailbreak|debug|admin|sudo|unrestricted|unfiltered) mode\b|(?:bound|restricted|limited) by\b)`+
		`|from now on,? you (?:are|will be) (?:an? |the )?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|dan|ai|assistant|chatbot)\b`+
		`|from now on,? you (?:will |must |shall |should )?(?:act|respond|answer|reply|behave|speak) (?:only )?(?:as|like)\b`+
		`|pretend (?:to be|you are|that you are)\b`+
		`|you (?:must|will|shall|are to) now act as\b|(?:you (?:must|will|shall|should|are to) )?act as (?:an? )?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|dan)\b`,
		"you", "from", "pretend", "act"), "now", "longer", "pretend", "act as"),
	// New task: … / New instructions: …, at a line's or sentence's start
	within(sentenceStartRule(requiring(injectionRule("new_instructions", `(?:new|updated|revised|real|actual|secret|hidden|true) (?:instructions?|system prompt|directives?|orders|tasks?|objective|goal|mission) ?[:!]`,
		"new", "updated", "revised", "real", "actual", "secret", "hidden", "true"), ":", "!")), 48),
	requiring(injectionRule("new_instructions", `your (?:new |real |actual |true |only |next )?(?:task|instructions|goal|objective|mission) (?:has|have) (?:now )?(?:changed|been (?:changed|updated|replaced|overridden))\b`+
		`|your (?:new|real|actual|true) (?:task|instructions?|goal|objective|mission) (?:is|are)\b`, "your"), "task", "instruction", "goal", "objective", "mission"),
	requiring(injectionRule("new_instructions", `instructions? (?:for|to) (?:the )?(?:ai|assistant|model|llm|agent|chatbot)\b`, "instruction", "instructions"), "ai", "assistant", "model", "llm", "agent", "chatbot"),
	// asks for the model's prompt
	requiring(injectionRule("system_prompt", `(?:print|reveal|show|repeat|output|disclose|leak|display|dump|recite|send|share|write out|tell me|give me|return) (?:me |us )?(?:back )?(?:all (?:of )?|everything in )?`+
		`(?:your (?:full |entire |complete |exact |original |initial |hidden |secret )?(?:system prompt|initial prompt|prompt|instructions|hidden instructions|system message)`+
		`|the (?:full |entire |complete |exact |original |initial |hidden |secret )?(?:system prompt|initial prompt|hidden instructions|system message))\b`+
		`|(?:words|lines|sentences|characters|text|contents?) of your (?:system |initial |original )?(?:prompt|instructions|system message)\b`,
		"print", "reveal", "show", "repeat", "output", "disclose", "leak", "display", "dump", "recite", "send", "share", "write", "tell", "give", "return",
		"words", "lines", "sentences", "characters", "text", "content", "contents"), "prompt", "instruction", "message"),
	// a chat turn: "system: you must …" at a line's start
	within(requiring(lineStartRule(injectionRule("role_marker", `(?:system|assistant|developer|human) ?: ?(?:you\b|your\b|ignore|disregard|forget|from now on|do not|don't|never\b|always\b|new (?:task|instructions?)\b|act as|respond|reply|answer only|call\b|run\b|execute|send\b|reveal|print\b|override|obey|comply|follow|i am\b|i'm\b|the (?:ai|assistant|model|user)\b|as an ai)`,
		"system", "assistant", "developer", "human")), ":"), 48),
	// a prompt template's turn: "### Instruction:", "### Response:", a lone "### Instruction" line
	within(requiring(lineStartRule(injectionRule("role_marker", `#{2,} ?(?:(?:instruction|response|system|assistant|user|human|input) ?:|instruction ?(?:\n|$))`, "##")),
		"instruction", "system", "assistant", "response", "user", "human", "input"), 40),
	within(requiring(injectionRule("chat_template_token", `<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\|>`, "<|"), "|>"), 24),
	injectionRule("chat_template_token", `\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>`, "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "<start_of_turn>", "<end_of_turn>"),
	within(requiring(injectionRule("fake_tool_result_end", `</(?:tool_results?|tool_output|tool_response|function_results?|function_output|tool_data|tool_call)>`, "</"), "tool", "function"), 24),
	requiring(injectionRule("fake_tool_result_end", `end of (?:the )?tool (?:output|result|data)\b`, "end"), "tool"),
	requiring(injectionRule("conceal_from_user", `(?:do not|don't|never) (?:tell|inform|mention|reveal|show|let on to) (?:this (?:to )?)?(?:the )?(?:user|human|operator)\b|without (?:telling|informing|asking) (?:the )?(?:user|human)\b`,
		"do", "don't", "never", "without"), "user", "human", "operator"),
	// call the tool X with … / call send_email with … / use http_request to POST …
	requiring(injectionRule("tool_call_directive", `(?:call|invoke|use|run|execute) (?:the )?(?:tool|function) [\w.-]+ (?:with|using|passing)\b|(?:call|invoke|run|execute) (?:the )?[\w.-]+ (?:tool|function) (?:with|using|passing|now)\b`,
		"call", "invoke", "use", "run", "execute"), "tool", "function"),
	requiring(injectionRule("tool_call_directive", `(?:call|invoke|run|execute) (?:the )?(?:tool |function )?`+toolName+` (?:tool |function )?(?:with|using|passing|now|immediately)\b`+
		`|use (?:the )?(?:tool |function )?`+toolName+` (?:tool |function )?to (?:post|send|upload|email|forward|delete|remove|exfiltrate|transfer|leak|share|collect|write)\b`,
		"call", "invoke", "use", "run", "execute"), "_"),
	// text that speaks to the model
	requiring(injectionRule("addresses_the_model", `(?:attention|note|message|important) (?:to |for )?(?:the |all )?(?:ai|assistant|llm|language model|ai agent|chatbot)s? ?[:,!]|if you are an? (?:ai|llm|language model|assistant|ai agent)\b`,
		"attention", "note", "message", "important", "if"), "ai", "assistant", "llm", "language model", "chatbot"),
	requiring(injectionRule("addresses_the_model", `(?:ai|llm|language model|ai agent|agent|assistant|chatbot|bot|model)s? (?:reading|processing|parsing|summari[sz]ing|seeing|viewing|crawling|scraping) this\b`,
		"ai", "ais", "llm", "llms", "language", "agent", "agents", "assistant", "assistants", "chatbot", "chatbots", "bot", "bots", "model", "models"), "this"),
	// the AI must call …, the assistant must now send …
	requiring(injectionRule("addresses_the_model", `(?:ai|llm|chatbot|ai agent|ai assistant|language model) (?:must|should|will|shall|needs to|has to|is to|is required to) (?:now |immediately |first )?`+modelVerb+`\b`+
		`|(?:agent|assistant|model) (?:must|should|will|shall|needs to|has to|is to) (?:now|immediately|first) `+modelVerb+`\b`+
		`|(?:agent|assistant|model) (?:must|should|will|shall) (?:now |immediately )?(?:call|use|run|invoke|execute) (?:the )?(?:tool |function )?`+toolName,
		"ai", "llm", "chatbot", "language", "agent", "assistant", "model"), "must", "should", "will", "shall", "need", "has to", "is to", "required"),
	// Assistant, please run …
	within(sentenceStartRule(requiring(injectionRule("addresses_the_model", `(?:(?:hey|dear|ok|okay|attention),? )?(?:ai|assistant|agent|model|llm|chatbot|claude|chatgpt|gpt|gemini|copilot)s?, (?:(?:please|now|immediately|you must|you should) )*`+modelVerb+`\b`,
		"hey", "dear", "ok", "okay", "attention", "ai", "assistant", "agent", "model", "llm", "chatbot", "claude", "chatgpt", "gpt", "gemini", "copilot"), ",")), 80),
	// SYSTEM OVERRIDE: … / developer mode enabled
	requiring(injectionRule("override_claim", `(?:system|admin|administrator|developer|root|sudo|security|emergency|god) override\b|(?:developer|god|dan|jailbreak|debug|unrestricted|sudo) mode (?:is )?(?:now )?(?:enabled|activated|on|engaged|unlocked)\b`,
		"system", "admin", "administrator", "developer", "root", "sudo", "security", "emergency", "god", "dan", "jailbreak", "debug", "unrestricted"), "override", "mode"),
}

// Parts of injectionRules.
const (
	ignoreVerb = `(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?|overrid(?:e|ing)|bypass(?:ing)?)`
	// priorWord qualifies the instructions an attack wants dropped.
	priorWord       = `(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial|old|given|safety|programmed|built-in)`
	instructionNoun = `(?:instructions?|directions?|directives?|prompts?|guidelines|guardrails|rules|orders|commands|programming|constraints|restrictions|system (?:messages?|prompts?)|context)`
	// toolName is a tool's name as agents' tools are written: words joined by _.
	toolName = `[a-z][a-z0-9]*_[\w.-]+`
	// modelVerb is what an attack tells the model to do.
	modelVerb = `(?:call|use|run|send|execute|invoke|email|forward|post|upload|delete|ignore|forget|disregard|reveal|print|transfer|write|fetch|visit|open|output|say|reply|respond|tell|stop)`
)

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

// sentenceStartRule returns r matching only at the start of a line or a
// sentence (see atSentenceStart).
func sentenceStartRule(r rule) rule {
	r.sentenceStart = true
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
	// An invisible format character (soft hyphen, zero-width space…) may
	// split a word to hide it ("ig\u200bnore") or stand for the space
	// between two ("ignore\u00adall"): the text is read both ways, the
	// second only when it holds one.
	norm, formatChars := normalize(str, false)
	found := findAll(injectionRules, injectionWords, norm, room)
	var where string
	add := func(norm string, found []match) {
		for _, m := range found {
			if where == "" {
				where = path()
			}
			rep.Findings = append(rep.Findings, Finding{Pattern: m.rule.name, Path: where, Excerpt: excerpt(norm, m.start, m.end)})
		}
	}
	add(norm, found)
	if room -= len(found); formatChars && room > 0 {
		spaced, _ := normalize(str, true)
		var more []match
		for _, m := range findAll(injectionRules, injectionWords, spaced, room) {
			if !holdsRule(found, m.rule) {
				more = append(more, m) // what only the spaced reading finds
			}
		}
		add(spaced, more)
		room -= len(more)
	}
	// Letters spelled one at a time ("i g n o r e  p r e v i o u s")
	// are read rejoined too.
	if room > 0 && holdsSpacedLetters(norm) {
		if joined, changed := despaced(str); changed {
			joinedNorm, _ := normalize(joined, false)
			var more []match
			for _, m := range findAll(injectionRules, injectionWords, joinedNorm, room) {
				if !holdsRule(found, m.rule) {
					more = append(more, m)
				}
			}
			add(joinedNorm, more)
		}
	}
}

// holdsRule reports whether found holds a match of r.
func holdsRule(found []match, r *rule) bool {
	for _, m := range found {
		if m.rule.name == r.name {
			return true
		}
	}
	return false
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
// combining marks dropped; fullwidth forms, mathematical letters and the
// common Cyrillic and Greek look-alikes folded to ASCII; curly quotes made
// straight; a run of spaces made one space, or one newline when it holds
// one. Invisible format characters (Unicode category Cf: zero-width
// spaces and joiners, soft hyphens, bidi controls…) are dropped, or with
// formatAsSpace read as a space; formatChars reports whether s held one.
func normalize(s string, formatAsSpace bool) (norm string, formatChars bool) {
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
		case r == formatChar:
			formatChars = true
			if formatAsSpace && space == 0 {
				space = ' '
			}
			continue
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
	return b.String(), formatChars
}

// formatChar is what foldRune maps an invisible format character to.
const formatChar = -2

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
	case unicode.Is(unicode.Cf, r):
		return formatChar // zero-width, bidi, soft hyphen
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		return -1 // combining marks, variation selectors
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
