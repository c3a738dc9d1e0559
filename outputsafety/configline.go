package outputsafety

import "strings"

// Config lines: the shape of .env, YAML, INI and ~/.aws/credentials
// files, a secret's name at a line's start, = or :, and its value:
//
//	DB_PASSWORD=S3cr3tP@ss!
//	aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
//	  password: correcthorsebatterystaple
//
// There the value is a secret whatever it looks like, unless it is code
// (an expression, a variable's name) or a reference to a secret kept
// elsewhere ($API_KEY, ${TOKEN}, $(cat key)). A secret named in prose
// ("my password is …") is not in this shape and is left alone: catching
// it would flag ordinary sentences.

const (
	// maxConfigKey bounds the name of a config line.
	maxConfigKey = 64
	// minConfigValue is the shortest bare value redacted; shorter ones
	// are words such as "none", "true" or "***".
	minConfigValue = 6
	// minQuotedConfigValue is the shortest quoted value redacted.
	minQuotedConfigValue = 4
)

// configLineMatches returns the values of the config lines in str that
// name a secret, in order. Each line is read once from its start.
func configLineMatches(str string) []match {
	var ms []match
	for start := 0; start < len(str); {
		end := strings.IndexByte(str[start:], '\n')
		if end < 0 {
			end = len(str)
		} else {
			end += start
		}
		if s, e, ok := configLineValue(str[start:end]); ok {
			ms = append(ms, match{rule: &configLineRule, start: start + s, end: start + e})
		}
		start = end + 1
	}
	return ms
}

// configLineRule names the matches of configLineMatches.
var configLineRule = rule{name: "config_line"}

// configLineValue returns the span of the secret value of line when line
// is a config line naming a secret.
func configLineValue(line string) (start, end int, ok bool) {
	i := skipBlanks(line, 0)
	if strings.HasPrefix(line[i:], "export ") || strings.HasPrefix(line[i:], "- ") { // shell, a YAML list item
		i = skipBlanks(line, i+strings.IndexByte(line[i:], ' '))
	}
	k := i
	for k < len(line) && k-i <= maxConfigKey && (isWordByte(line[k]) || line[k] == '-' || line[k] == '.') {
		k++
	}
	if k == i || k-i > maxConfigKey || !namesSecret(line[i:k]) {
		return 0, 0, false
	}
	j := skipBlanks(line, k)
	if j >= len(line) || line[j] != '=' && line[j] != ':' {
		return 0, 0, false
	}
	j++
	if j < len(line) && line[j] == '=' { // == compares; := declares (code: judged by its value)
		if line[j-1] == '=' {
			return 0, 0, false
		}
		j++
	}
	j = skipBlanks(line, j)
	if j < len(line) && (line[j] == '"' || line[j] == '\'') {
		q := strings.IndexByte(line[j+1:], line[j])
		if q < minQuotedConfigValue || line[j+1] == '$' {
			return 0, 0, false
		}
		return j + 1, j + 1 + q, true
	}
	e := j
	for e < len(line) && line[e] != ' ' && line[e] != '\t' && line[e] != '\r' {
		e++
	}
	if e-j < minConfigValue || isCode(line[j:e]) || isAuthScheme(line[j:e]) {
		return 0, 0, false
	}
	return j, j + len(strings.TrimRight(line[j:e], ",;")), true // a list's or a header's separator stays
}

// isCode reports whether the bare value v of a config line is code or a
// reference rather than a secret: it starts with $, is called, indexed or
// a literal ((, [, {), is a dotted name (os.environ, settings.API_KEY,
// process.env.TOKEN) or a variable's snake_case name (user_password).
func isCode(v string) bool {
	v = strings.TrimRight(v, ",;")
	if v == "" || v[0] == '$' || strings.ContainsAny(v, "([{") || isDottedName(v) {
		return true
	}
	if strings.EqualFold(v, "undefined") {
		return true
	}
	return strings.Contains(v, "_") && isIdentifier(v) && !looksRandom(v)
}

// skipBlanks returns the index of the first byte of s at or after i that
// is not a space or a tab.
func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// isAuthScheme reports whether v is the scheme of an Authorization
// header, whose credential after it the "authorization" rule redacts.
func isAuthScheme(v string) bool {
	for _, scheme := range []string{"bearer", "basic", "digest", "token"} {
		if strings.EqualFold(v, scheme) {
			return true
		}
	}
	return false
}
