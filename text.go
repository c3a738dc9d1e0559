package toolgate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckPlainText returns why text cannot be stored as plain text alike by
// every database the gateway runs on, or nil. It must be valid UTF-8 (a
// string decoded from JSON always is; a header, a path or a query may
// not be) and hold no NUL (U+0000): PostgreSQL's text refuses both, while
// SQLite keeps them, so the gateway refuses them (400) before anything is
// stored, for one answer on either database. A value stored as JSON text
// (args, output, details, metadata) keeps a NUL as the escape \u0000 and
// needs no such check. The error reads after the field's name:
// "description holds a NUL character (U+0000) at byte 3".
func CheckPlainText(text string) error {
	if !utf8.ValidString(text) {
		return fmt.Errorf("is not valid UTF-8 (at byte %d)", firstInvalidUTF8([]byte(text)))
	}
	if i := strings.IndexByte(text, 0); i >= 0 {
		return fmt.Errorf("holds a NUL character (U+0000) at byte %d", i)
	}
	return nil
}

// CheckPrintableText is CheckPlainText for a value that is a key rather
// than prose (an Idempotency-Key): it holds no control character either
// (U+0000 to U+001F, U+007F to U+009F).
func CheckPrintableText(text string) error {
	if err := CheckPlainText(text); err != nil {
		return err
	}
	for i, r := range text {
		if unicode.IsControl(r) {
			return fmt.Errorf("holds the control character %U at byte %d", r, i)
		}
	}
	return nil
}
