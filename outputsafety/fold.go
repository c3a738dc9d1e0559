package outputsafety

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Cheap disguises of a credential — a Cyrillic or Greek letter that looks
// like a Latin one ("ѕk-…" with a Cyrillic ѕ), a fullwidth or
// mathematical letter, an invisible format character inside it (a
// zero-width space in "sk-"), a combining mark, a dash that is not "-" —
// are undone before the credential patterns look: a string holding one is
// folded (foldForCredentials), searched (credentialSpans), and what is
// found replaced where it lies in the string as written.

// foldForCredentials returns str with its look-alike letters, fullwidth
// and mathematical letters and dashes folded to ASCII (their case kept),
// its invisible format characters and combining marks dropped, and for
// each byte of the result (and one past its end) the offset in str it
// comes from; ok is false when str holds nothing to fold.
func foldForCredentials(str string) (folded string, from []int32, ok bool) {
	i := 0
	for i < len(str) && str[i] < utf8.RuneSelf {
		i++
	}
	if i == len(str) {
		return str, nil, false
	}
	var b strings.Builder
	b.Grow(len(str))
	b.WriteString(str[:i])
	from = make([]int32, i, len(str)+1)
	for k := range from {
		from[k] = int32(k)
	}
	for i < len(str) {
		r, size := utf8.DecodeRuneInString(str[i:])
		f := r
		if r >= utf8.RuneSelf {
			f = foldCredentialRune(r)
		}
		switch {
		case f < 0:
			ok = true
		case f != r:
			ok = true
			b.WriteRune(f)
			from = append(from, int32(i))
		default:
			b.WriteString(str[i : i+size])
			for k := range size {
				from = append(from, int32(i+k))
			}
		}
		i += size
	}
	from = append(from, int32(len(str)))
	return b.String(), from, ok
}

// foldCredentialRune maps a non-ASCII rune to the ASCII character it
// passes for in a credential, -1 to drop it, or itself.
func foldCredentialRune(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E: // fullwidth ASCII
		return r - 0xFEE0
	case r >= 0x1D400 && r <= 0x1D6A3: // mathematical letters, 52 to a style, capitals first
		if k := (r - 0x1D400) % 52; k < 26 {
			return 'A' + k
		} else {
			return 'a' + k - 26
		}
	case r == '\u2010' || r == '\u2011' || r == '\u2012' || r == '\u2013' || r == '\u2014' || r == '\u2212' || r == '\uFE63':
		return '-'
	case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		return -1
	}
	if a, ok := lookAlikes[r]; ok {
		if unicode.IsUpper(r) {
			return unicode.ToUpper(a)
		}
		return a
	}
	return r
}

// credentialSpans returns every credential the patterns find in text, in
// order and without overlaps, as redactCredentials would redact them:
// PEM blocks, then shapes, then values named by what precedes them, each
// stage blind to what an earlier one found (masked with spaces, so the
// offsets stay those of text).
func credentialSpans(text string) []match {
	if !mayHoldCredential(text) {
		return nil
	}
	found := pemMatches(text)
	masked := maskSpans(text, found)
	tokens := tokenMatches(masked)
	found = append(found, tokens...)
	masked = maskSpans(masked, tokens)
	found = append(found, pairMatches(masked)...)
	return withoutOverlaps(found)
}

// maskSpans returns text with the bytes of ms made spaces.
func maskSpans(text string, ms []match) string {
	if len(ms) == 0 {
		return text
	}
	b := []byte(text)
	for _, m := range ms {
		for i := m.start; i < m.end; i++ {
			b[i] = ' '
		}
	}
	return string(b)
}

// unfoldSpans maps spans of a folded text back to the text it was folded
// from (from: foldForCredentials).
func unfoldSpans(ms []match, from []int32) []match {
	out := make([]match, len(ms))
	for i, m := range ms {
		out[i] = match{rule: m.rule, start: int(from[m.start]), end: int(from[m.end]), group: m.group}
	}
	return out
}
