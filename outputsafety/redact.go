package outputsafety

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// needle is one text to redact wherever it appears: a known secret or
// one of its encodings.
type needle struct {
	text string
	name string
}

// secretNeedles returns the known secrets and their encodings, longest
// first (a longer text is replaced before a shorter one inside it).
func secretNeedles(secrets []Secret) []needle {
	seen := map[string]bool{}
	var out []needle
	add := func(text, name string) {
		if len(text) >= minEncodedSecretLength && !seen[text] {
			seen[text] = true
			out = append(out, needle{text: text, name: name})
		}
	}
	for _, sec := range secrets {
		if len(sec.Value) < MinSecretLength {
			continue
		}
		name := sec.Name
		if name == "" {
			name = "secret"
		}
		if !seen[sec.Value] { // the secret itself, whatever its length
			seen[sec.Value] = true
			out = append(out, needle{text: sec.Value, name: name})
		}
		add(url.QueryEscape(sec.Value), name)
		add(url.PathEscape(sec.Value), name)
		add(percentEscapeAll(sec.Value, "%%%02X"), name)
		add(percentEscapeAll(sec.Value, "%%%02x"), name)
		add(hex.EncodeToString([]byte(sec.Value)), name)
		add(strings.ToUpper(hex.EncodeToString([]byte(sec.Value))), name)
		for _, core := range base64Cores(sec.Value) {
			add(core, name)
			add(strings.NewReplacer("+", "-", "/", "_").Replace(core), name)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].text) > len(out[j].text) })
	return out
}

// percentEscapeAll returns secret with every byte but ASCII letters and
// digits percent-encoded in format (upper- or lower-case hex): stricter
// encoders than url.QueryEscape escape "-", "." and "_" too.
func percentEscapeAll(secret, format string) string {
	var b strings.Builder
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, format, c)
		}
	}
	return b.String()
}

// base64Cores returns, for each of the three alignments the secret can
// have inside a longer base64 text (such as the "user:key" of an HTTP
// Basic credential), the characters of its encoding that depend on the
// secret's bytes alone: whatever surrounds the secret, its base64 holds
// one of them.
func base64Cores(secret string) []string {
	var cores []string
	for align := 0; align < 3; align++ {
		buf := make([]byte, align, align+len(secret))
		buf = append(buf, secret...)
		enc := base64.RawStdEncoding.EncodeToString(buf)
		start := (8*align + 5) / 6           // the first character with no bit of the prefix
		end := 8 * (align + len(secret)) / 6 // past the last character made of whole secret bits
		if end > start {
			cores = append(cores, enc[start:end])
		}
	}
	return cores
}

// secretWords are the words that make an object member's key name a
// secret when the key ends with one of them ("github_token",
// "clientSecret", "X-Api-Key", "set-cookie"); "token_type" or
// "password_hint" end with another word and are left alone. Ids are not
// secrets ("session_id"), nor are counts ("max_tokens", "tokens").
var secretWords = map[string]bool{
	"password": true, "passwords": true, "passwd": true, "passphrase": true, "pwd": true,
	"secret": true, "secrets": true, "token": true,
	"apikey": true, "apikeys": true, "authorization": true, "auth": true,
	"privatekey": true, "accesskey": true, "secretkey": true, "signingkey": true,
	"credential": true, "credentials": true, "cookie": true, "cookies": true,
	"sessionkey": true, "clientkey": true, "agentkey": true,
}

// namesSecret reports whether an object key names a secret: its last word,
// or its last two words joined ("api_key" → "apikey"), is a secret word.
func namesSecret(key string) bool {
	words := keyWords(key)
	n := len(words)
	if n == 0 {
		return false
	}
	if secretWords[words[n-1]] {
		return true
	}
	return n >= 2 && secretWords[words[n-2]+words[n-1]]
}

// keyWords splits a key into lowercase words at punctuation, spaces and
// camelCase humps.
func keyWords(key string) []string {
	if len(key) > 64 {
		return nil // not a field name
	}
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range key {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prevLower {
				flush()
			}
			cur = append(cur, r)
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return words
}

// tokenRules match values that are credentials by their shape alone;
// each match is redacted whole. PEM private key blocks are found by
// redactPEM.
var tokenRules = []rule{
	newRule("openai_key", `sk-[A-Za-z0-9_-]{20,}`, 512, "sk-"),
	newRule("aws_access_key_id", `(?:AKIA|ASIA)[A-Z0-9]{16}\b`, 32, "AKIA", "ASIA"),
	newRule("github_token", `gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}`, 512, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
	newRule("slack_token", `xox[abprs]-[A-Za-z0-9-]{10,}`, 512, "xox"),
	newRule("google_api_key", `AIza[0-9A-Za-z_-]{35}`, 64, "AIza"),
	newRule("stripe_key", `[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`, 512, "sk_live_", "sk_test_", "rk_live_", "rk_test_"),
	newRule("jwt", `eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*`, 16<<10, "eyJ"),
	newRule("gitlab_token", `gl(?:pat|dt|rt|cbt|ptt|oas|ft|imt|soat|ffct)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]{2,}){0,2}`, 512,
		"glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "gloas-", "glft-", "glimt-", "glsoat-", "glffct-"),
	newRule("npm_token", `npm_[A-Za-z0-9]{36}\b`, 64, "npm_"),
	newRule("huggingface_token", `hf_[A-Za-z0-9]{30,}\b`, 256, "hf_"),
	newRule("sendgrid_key", `SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}`, 128, "SG."),
	newRule("twilio_key", `(?:SK|AC)[0-9a-fA-F]{32}\b`, 64, "SK", "AC"),
}

// sessionTokenRule matches the gateway's own session tokens ("tgs_" and
// 43 base64url characters, server/sessions.go). The gateway keeps only
// their hashes, so they are found by their shape, in every mode: they
// are the gateway's secrets as much as its agent key is.
var sessionTokenRule = []rule{newRule("session_token", `tgs_[A-Za-z0-9_-]{40,}`, 128, "tgs_")}

// redactSessionTokens replaces the session tokens in str.
func redactSessionTokens(str string) (string, int) {
	if !strings.Contains(str, "tgs_") {
		return str, 0
	}
	return replaceMatches(str, findAll(sessionTokenRule, nil, str, 0), "session_token", func(match) bool { return true })
}

// secretNames are the names a pair rule finds a credential after.
const secretNames = `(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|api[_-]?key|access[_-]?key|secret[_-]?access[_-]?key|` +
	`access[_-]?token|refresh[_-]?token|auth[_-]?token|session[_-]?token|private[_-]?key|token)["']?\s*[:=]\s*`

// secretNameAnchors are the words secretNames start with.
var secretNameAnchors = []string{"password", "passwd", "pwd", "passphrase", "secret", "client", "api", "access", "refresh", "auth", "session", "private", "token"}

// pairRules match a credential named by what precedes it; the first
// group that matched is redacted, the name kept. They run on the text
// with its ASCII letters lowercased.
var pairRules = []rule{
	// password="…", 'api_key': '…' (groups 1, 2): a quoted value is a
	// literal, a secret whatever it looks like. password=hunter22,
	// API_KEY: 9f8e… (group 3): a bare value only when it looks like a
	// secret (namedValueLooksSecret), not an expression such as
	// os.environ['X'] or input(…) in code.
	newRule("named_value", secretNames+`(?:"([^"\n]{4,256})"|'([^'\n]{4,256})'|([^\s"'<>,;&\[\]{}()]{8,256}))`, 512, secretNameAnchors...),
	// Authorization: Bearer …
	newRule("authorization", `authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest)\s+)?([^\s"'<>,;\[\]{}]{8,})`, 4096, "authorization"),
	// a bare Bearer or Basic credential (kept unless it mixes letters and digits)
	newRule("bearer", `(?:bearer|basic)\s+([a-z0-9._~+/-]{16,}=*)`, 4096, "bearer", "basic"),
	// an Azure storage or Service Bus connection string's key
	newRule("azure_key", `(?:accountkey|sharedaccesskey)=([a-z0-9+/]{20,}={0,2})`, 512, "accountkey", "sharedaccesskey"),
	// the password of a URL, scheme://user:password@host
	{name: "url_password", anchors: []string{"://"}, re: regexp.MustCompile(`^://[^/\s:@]+:([^/\s@]{3,})@`), window: 512},
}

// redactCredentials replaces the values that look like credentials,
// also when look-alike letters or invisible characters disguise them
// (foldForCredentials).
func redactCredentials(str string) (string, int) {
	n := 0
	if folded, from, ok := foldForCredentials(str); ok {
		if ms := credentialSpans(folded); len(ms) > 0 {
			str, n = replaceMatches(str, unfoldSpans(ms, from), "credential", func(match) bool { return true })
		}
	}
	if !mayHoldCredential(str) {
		return str, n
	}
	str, k := redactPEM(str)
	n += k
	str, k = replaceMatches(str, tokenMatches(str), "credential", func(match) bool { return true })
	n += k
	str, k = replaceMatches(str, pairMatches(str), "credential", func(match) bool { return true })
	return str, n + k
}

// pairMatches returns the credentials in str named by what precedes them
// (pairRules) and the values of config lines, in order, without overlaps.
func pairMatches(str string) []match {
	var ms []match
	for _, m := range findAll(pairRules, nil, asciiLower(str), 0) {
		if pairValueIsSecret(str, m) {
			ms = append(ms, m)
		}
	}
	return withoutOverlaps(append(ms, configLineMatches(str)...))
}

// pairValueIsSecret reports whether the value a pair rule found is a
// secret: not a reference to one kept elsewhere ($API_KEY, ${TOKEN},
// $(cat key)), nor words or code where only a random-looking value is.
func pairValueIsSecret(str string, m match) bool {
	if str[m.start] == '$' {
		return false
	}
	switch m.rule.name {
	case "bearer":
		return looksRandom(str[m.start:m.end]) // "Basic information…"
	case "named_value":
		return m.group != 3 || namedValueLooksSecret(str, m.start, m.end)
	}
	return true
}

// withoutOverlaps sorts ms by start and drops each match that overlaps
// one kept before it (the earlier, then longer, wins).
func withoutOverlaps(ms []match) []match {
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].start != ms[j].start {
			return ms[i].start < ms[j].start
		}
		return ms[i].end > ms[j].end
	})
	out := ms[:0]
	for _, m := range ms {
		if len(out) == 0 || m.start >= out[len(out)-1].end {
			out = append(out, m)
		}
	}
	return out
}

// namedValueLooksSecret reports whether the bare value str[start:end]
// after a secret's name looks like a secret rather than code: it mixes
// letters with digits or symbols, and is not an expression — a dotted
// name (os.environ, config.api_key2) or one that is called or indexed
// (getenv(…), env[…]).
func namedValueLooksSecret(str string, start, end int) bool {
	v := str[start:end]
	if end < len(str) && (str[end] == '(' || str[end] == '[') {
		return false
	}
	if isDottedName(v) {
		return false
	}
	letter, other := false, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		case c == '_' || c == '.' || c == '-':
		default:
			other = true // a digit, a symbol, a non-ASCII letter
		}
	}
	return letter && other
}

// isDottedName reports whether v is names joined by dots, as code
// writes a field or module lookup: os.environ, settings.API_KEY_2. A
// name starts with a letter or _ and has no digit followed by a letter
// (ya29.a0AfH6 is a token, not a lookup).
func isDottedName(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || !(p[0] == '_' || p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z') {
			return false
		}
		for i := 0; i < len(p); i++ {
			if !isWordByte(p[i]) || i > 0 && isDigit(p[i-1]) && p[i] != '_' && !isDigit(p[i]) {
				return false
			}
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// replaceMatches replaces the matches keep accepts with the placeholder
// of name.
func replaceMatches(str string, ms []match, name string, keep func(match) bool) (string, int) {
	var b strings.Builder
	last, n := 0, 0
	for _, m := range ms {
		if !keep(m) {
			continue
		}
		b.WriteString(str[last:m.start])
		b.WriteString(placeholder(name))
		last = m.end
		n++
	}
	if n == 0 {
		return str, 0
	}
	b.WriteString(str[last:])
	return b.String(), n
}

// pemHeader and pemFooter are the lines around a PEM private key.
var (
	pemHeader = regexp.MustCompile(`^-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----`)
	pemFooter = regexp.MustCompile(`^-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----`)
	pemBody   = regexp.MustCompile(`^[A-Za-z0-9+/=\s:,-]*`)
)

// maxPEMBlock bounds the text between a private key's header and footer.
const maxPEMBlock = 32 << 10

// redactPEM replaces PEM private key blocks, header to footer, or header
// and the base64 after it when the footer is missing.
func redactPEM(str string) (string, int) {
	return replaceMatches(str, pemMatches(str), "credential", func(match) bool { return true })
}

// pemMatches returns the PEM private key blocks in str (redactPEM).
func pemMatches(str string) []match {
	if !strings.Contains(str, "-----BEGIN ") {
		return nil
	}
	var ms []match
	nextEnd := -1 // the next "-----END " at or after the search, found once
	for from := 0; ; {
		k := strings.Index(str[from:], "-----BEGIN ")
		if k < 0 {
			break
		}
		pos := from + k
		h := pemHeader.FindStringIndex(str[pos:min(pos+64, len(str))])
		if h == nil {
			from = pos + 1
			continue
		}
		body := pos + h[1]
		if nextEnd < body {
			nextEnd = len(str)
			if e := strings.Index(str[body:], "-----END "); e >= 0 {
				nextEnd = body + e
			}
		}
		end := body + pemBody.FindStringIndex(str[body:min(body+maxPEMBlock, len(str))])[1]
		if nextEnd-body <= maxPEMBlock && nextEnd < len(str) {
			if f := pemFooter.FindStringIndex(str[nextEnd:min(nextEnd+64, len(str))]); f != nil {
				end = nextEnd + f[1]
			}
		}
		ms = append(ms, match{rule: &pemRule, start: pos, end: end})
		from = max(end, pos+1)
	}
	return ms
}

var pemRule = rule{name: "private_key"}

// looksRandom reports whether s mixes letters and digits, as generated
// keys do and words do not.
func looksRandom(s string) bool {
	letter, digit := false, false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letter = true
		}
	}
	return letter && digit
}

// mayHoldCredential is a cheap first look: every pattern needs one of
// these, so most short texts skip the rest.
func mayHoldCredential(str string) bool {
	return len(str) >= 8 && (strings.ContainsAny(str, "_-=:.") || strings.Contains(str, "AKIA") || strings.Contains(str, "ASIA") ||
		strings.Contains(str, "AIza") || strings.Contains(str, "SK") || strings.Contains(str, "AC") ||
		containsFold(str, "bearer") || containsFold(str, "basic") || holdsBase64Run(str))
}

// containsFold reports whether s holds sub (ASCII lowercase) in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// holdsBase64Run reports whether str holds minBase64Run letters, digits,
// + or / in a row: base64 that may hide a credential (base64Matches).
func holdsBase64Run(str string) bool {
	run := 0
	for i := 0; i < len(str); i++ {
		if isBase64StdByte(str[i]) {
			if run++; run >= minBase64Run {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}
