package outputsafety

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// Credential shapes with no literal prefix of their own, found by a scan
// of their own rather than by a rule's anchors (tokenMatches).

// discordToken is a Discord bot token: the bot's id in base64 (24 to 28
// characters, starting M, N or O for the ids of the last years), a
// timestamp (6) and an HMAC (27 to 38), joined by dots.
var discordToken = regexp.MustCompile(`^[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}`)

// discordMatches returns the Discord bot tokens in str, found from each
// dot that a token's first part could end at.
func discordMatches(str string) []match {
	var ms []match
	for from := 0; ; {
		k := strings.IndexByte(str[from:], '.')
		if k < 0 {
			return ms
		}
		dot := from + k
		from = dot + 1
		start := dot
		for start > 0 && dot-start < 29 && isBase64URLByte(str[start-1]) {
			start--
		}
		if n := dot - start; n < 24 || n > 28 || start > 0 && (isWordByte(str[start-1]) || str[start-1] == '.') {
			continue
		}
		loc := discordToken.FindStringIndex(str[start:min(start+80, len(str))])
		if loc == nil || start+loc[1] < len(str) && isBase64URLByte(str[start+loc[1]]) || !looksRandom(str[start:dot]) {
			continue
		}
		ms = append(ms, match{rule: &discordRule, start: start, end: start + loc[1]})
		from = start + loc[1]
	}
}

var discordRule = rule{name: "discord_token"}

// awsSecretNear is how far from an AWS access key id an unlabelled secret
// access key is looked for.
const awsSecretNear = 256

// awsSecretMatches returns the AWS secret access keys in str that no name
// labels: 40 characters of base64 (no padding) mixing upper and lower
// case and digits or / and +, as a whole word within awsSecretNear bytes
// of an access key id (AKIA…, ASIA…). Alone, such a string is as likely
// a hash or an id; beside a key id it is the key's secret.
func awsSecretMatches(str string, ids []match) []match {
	var ms []match
	next := 0 // where the search for candidates goes on
	for _, id := range ids {
		if id.rule.name != "aws_access_key_id" {
			continue
		}
		lo, hi := max(next, id.start-awsSecretNear), min(len(str), id.end+awsSecretNear)
		for i := lo; i < hi; {
			if !isBase64StdByte(str[i]) {
				i++
				continue
			}
			j := i
			for j < len(str) && isBase64StdByte(str[j]) {
				j++
			}
			if j-i == 40 && (i == 0 || str[i-1] != '=') && (j == len(str) || str[j] != '=') && looksLikeAWSSecret(str[i:j]) {
				ms = append(ms, match{rule: &awsSecretRule, start: i, end: j})
			}
			i = j
		}
		next = hi
	}
	return ms
}

var awsSecretRule = rule{name: "aws_secret_access_key"}

// looksLikeAWSSecret reports whether s mixes upper and lower case letters
// with digits or / and +.
func looksLikeAWSSecret(s string) bool {
	var upper, lower, other bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		default:
			other = true
		}
	}
	return upper && lower && other
}

func isBase64URLByte(c byte) bool { return isWordByte(c) || c == '-' }

func isBase64StdByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/'
}

// tokenMatches returns the credentials in str found by their shape alone,
// in order, without overlaps, also when base64 hides them (base64Matches).
func tokenMatches(str string) []match {
	return withoutOverlaps(append(shapeMatches(str), base64Matches(str)...))
}

// shapeMatches returns the credentials in str found by their shape.
func shapeMatches(str string) []match {
	var ms []match
	for _, m := range findAll(tokenRules, nil, str, 0) {
		if m.rule.name != "openai_key" || looksRandom(str[m.start+3:m.end]) { // "sk-learn-…" is a word
			ms = append(ms, m)
		}
	}
	ms = append(ms, awsSecretMatches(str, ms)...)
	if strings.IndexByte(str, '.') >= 0 {
		ms = append(ms, discordMatches(str)...)
	}
	return withoutOverlaps(ms)
}

// minBase64Run is the shortest base64 text decoded to look for a
// credential in: the base64 of the shortest credential shape (20 bytes).
const minBase64Run = 26

// maxBase64Run bounds one base64 text decoded (an output is at most 1
// MiB, so this bounds nothing an output could not hold, but keeps one
// decoding's buffer small): a longer run is looked at in its first part.
const maxBase64Run = 64 << 10

// base64Matches returns the runs of base64 (standard or URL alphabet,
// padded or not) in str whose decoding is text holding a credential that
// any of the patterns finds (credentialSpans: a token's shape, a PEM
// private key, an AccountKey= or a password= pair, a config line; base64
// in the decoding too): the whole run is the match. A run whose decoding
// is not text (an image, compressed data) is left alone.
func base64Matches(str string) []match {
	var ms []match
	for i := 0; i < len(str); {
		if !isBase64AnyByte(str[i]) {
			i++
			continue
		}
		j := i
		for j < len(str) && isBase64AnyByte(str[j]) {
			j++
		}
		run := strings.TrimRight(str[i:j], "=")
		if len(run) >= minBase64Run && (i == 0 || !isWordByte(str[i-1])) {
			if decoded, ok := decodeBase64Text(run[:min(len(run), maxBase64Run)]); ok && len(credentialSpans(decoded)) > 0 {
				ms = append(ms, match{rule: &base64Rule, start: i, end: j})
			}
		}
		i = j
	}
	return ms
}

var base64Rule = rule{name: "base64_credential"}

func isBase64AnyByte(c byte) bool { return isBase64StdByte(c) || c == '-' || c == '_' || c == '=' }

// decodeBase64Text decodes run (unpadded, either alphabet) and reports
// whether it decodes to printable ASCII text.
func decodeBase64Text(run string) (string, bool) {
	if len(run)%4 == 1 {
		run = run[:len(run)-1]
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(run, "-_") {
		enc = base64.RawURLEncoding
	}
	out, err := enc.DecodeString(run)
	if err != nil {
		return "", false
	}
	for _, c := range out {
		if (c < 0x20 || c > 0x7e) && c != '\n' && c != '\r' && c != '\t' {
			return "", false
		}
	}
	return string(out), true
}
