// Package options reads a program's settings from one table: each
// option is declared once (flag, environment variable, config-file key,
// default, unit, allowed range, help) and the command-line flags, the
// environment, a YAML config file, range checks, the help text and the
// reference document all come from that declaration.
//
// An option names the field it fills with Field, which returns a pointer
// into the program's configuration type C: *string, *[]string (a
// comma-separated list), *int, *int64, *float64, *time.Duration, or a
// Lines value (a list of one entry a line, repeatable on the command
// line). A limit that can be switched off says so with Off: "off" (and,
// for a count, "unlimited") stores -1; one derived from others when
// unset says so with Auto: "auto" stores 0.
//
// Where a value is given, the most specific source wins: a flag over
// its environment variable, the variable over the config file, the file
// over the default.
package options

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Option declares one setting.
type Option[C any] struct {
	Name    string // flag name without dashes, e.g. "max-body-bytes"
	Env     string // environment variable, e.g. "TOOLGATE_MAX_BODY_BYTES"
	Key     string // config-file key, e.g. "max_body_bytes"
	Group   string // heading it is listed under in help and docs
	Default string // as it would be written on the command line
	Unit    string // e.g. "bytes", "duration", "per second"; empty for text
	Min     string // least value allowed, as written on the command line; empty: none
	Max     string // largest value allowed; empty: none
	Values  []string
	// Off: "off" (and "unlimited" for a count) switches the limit off,
	// stored as -1. Auto: "auto" derives the value, stored as 0.
	Off, Auto bool
	// Legacy says what the old numeric spellings meant, kept for one
	// release with a warning: see Legacy.
	Legacy Legacy
	// Aliases are old names of the option, still accepted with a warning.
	Aliases []Alias
	Help    string
	// Field returns the pointer into c the option fills.
	Field func(c *C) any
}

// Alias is a deprecated name of an option: flag, variable and file key.
type Alias struct {
	Name, Env, Key string
}

// Legacy names what 0 (and a negative number) meant for an option
// before "off" and "auto" could be said.
type Legacy int

const (
	// LegacyNone: numbers mean themselves.
	LegacyNone Legacy = iota
	// LegacyZeroDefault: 0 meant the default.
	LegacyZeroDefault
	// LegacyNotPositiveOff: 0 or less meant off.
	LegacyNotPositiveOff
	// LegacyZeroAutoNegativeOff: 0 meant auto, less meant off.
	LegacyZeroAutoNegativeOff
	// LegacyZeroAuto: 0 meant auto (less is out of range).
	LegacyZeroAuto
)

// Lines is a list option of one entry a line: repeatable on the command
// line (the first flag replaces what the variable or file gave), one
// entry a line in the variable, a sequence in the file.
type Lines interface {
	SetLines(lines []string) error
	Lines() []string
}

// Set parses raw into the option's field of c. It returns a warning
// when raw is an old spelling kept for one release.
func (o *Option[C]) Set(c *C, raw string) (warning string, err error) {
	t := strings.TrimSpace(raw)
	switch p := o.Field(c).(type) {
	case *string:
		*p = raw
		for _, v := range o.Values { // INFO is info, as it was before the values were listed
			if strings.EqualFold(t, v) {
				*p = v
			}
		}
		return "", nil
	case *[]string:
		*p = splitList(raw)
		return "", nil
	case Lines:
		var lines []string
		for _, l := range strings.Split(raw, "\n") {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		return "", p.SetLines(lines)
	}
	if o.Off && (t == "off" || (t == "unlimited" && o.isCount())) {
		return "", o.setNumber(c, -1)
	}
	if o.Auto && t == "auto" {
		return "", o.setNumber(c, 0)
	}
	if t == "off" || t == "unlimited" || t == "auto" {
		return "", fmt.Errorf("%q is not a value of this option: %s", t, o.Accepts())
	}
	if d, ok := o.Field(c).(*time.Duration); ok {
		v, err := time.ParseDuration(t)
		if err != nil {
			return "", fmt.Errorf("%q is not a duration such as 30s, 5m or 2h", t)
		}
		if v == 0 && o.Legacy == LegacyZeroDefault {
			w, err := o.Set(c, o.Default)
			return o.legacyWarning(t, "the default ("+o.Default+")", "leave it out") + w, err
		}
		*d = v
		return "", nil
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return "", fmt.Errorf("%q is not a number: %s", t, o.Accepts())
	}
	if o.isCount() && n != math.Trunc(n) {
		return "", fmt.Errorf("%q is not a whole number: %s", t, o.Accepts())
	}
	switch {
	case n == 0 && o.Legacy == LegacyZeroDefault:
		w, err := o.Set(c, o.Default)
		return o.legacyWarning(t, "the default ("+o.Default+")", "leave it out") + w, err
	case n <= 0 && o.Legacy == LegacyNotPositiveOff:
		return o.legacyWarning(t, "off", "say off"), o.setNumber(c, -1)
	case n == 0 && (o.Legacy == LegacyZeroAutoNegativeOff || o.Legacy == LegacyZeroAuto):
		return o.legacyWarning(t, "auto", "say auto"), o.setNumber(c, 0)
	case n < 0 && o.Legacy == LegacyZeroAutoNegativeOff:
		return o.legacyWarning(t, "off", "say off"), o.setNumber(c, -1)
	}
	return "", o.setNumber(c, n)
}

func (o *Option[C]) legacyWarning(given, meaning, instead string) string {
	return fmt.Sprintf("--%s %s means %s, an old spelling accepted for one more release: %s", o.Name, given, meaning, instead)
}

// setNumber stores n in a numeric field, refusing what does not fit.
func (o *Option[C]) setNumber(c *C, n float64) error {
	switch p := o.Field(c).(type) {
	case *int:
		if n > math.MaxInt32 || n < math.MinInt32 {
			return fmt.Errorf("%s is too large", strconv.FormatFloat(n, 'f', -1, 64))
		}
		*p = int(n)
	case *int64:
		if n > 1<<62 || n < -(1<<62) {
			return fmt.Errorf("%s is too large", strconv.FormatFloat(n, 'f', -1, 64))
		}
		*p = int64(n)
	case *float64:
		*p = n
	case *time.Duration:
		*p = time.Duration(n)
	default:
		return fmt.Errorf("option --%s: field of type %T", o.Name, p)
	}
	return nil
}

// isCount reports whether the option holds a whole number.
func (o *Option[C]) isCount() bool {
	var c C
	switch o.Field(&c).(type) {
	case *int, *int64:
		return true
	}
	return false
}

// Accepts describes the values the option takes, for help and errors.
func (o *Option[C]) Accepts() string {
	var c C
	var kind string
	switch o.Field(&c).(type) {
	case *string:
		if len(o.Values) > 0 {
			return orList(o.Values)
		}
		return "text"
	case *[]string:
		return "a comma-separated list"
	case Lines:
		return "a list, one entry a line"
	case *time.Duration:
		kind = "a duration (e.g. 30s, 5m, 2h)"
	case *float64:
		kind = "a number"
	default:
		kind = "a whole number"
	}
	if r := o.Range(); r != "" {
		kind += " " + r
	}
	switch {
	case o.Off && o.Auto:
		kind += ", auto or off"
	case o.Off && o.isCount():
		kind += ", or off (also: unlimited)"
	case o.Off:
		kind += ", or off"
	case o.Auto:
		kind += ", or auto"
	}
	return kind
}

// Range is "from MIN to MAX", "at least MIN" or "at most MAX".
func (o *Option[C]) Range() string {
	switch {
	case o.Min != "" && o.Max != "":
		return "from " + o.Min + " to " + o.Max
	case o.Min != "":
		return "at least " + o.Min
	case o.Max != "":
		return "at most " + o.Max
	}
	return ""
}

// Check reports a value of c's field that is outside the option's range
// or values. Off and auto pass when the option allows them; an empty
// string passes an option with Values (the program's default applies).
func (o *Option[C]) Check(c *C) error {
	var v, lo, hi float64
	bounds := func(parse func(string) (float64, error)) error {
		lo, hi = math.Inf(-1), math.Inf(1)
		var err error
		if o.Min != "" {
			if lo, err = parse(o.Min); err != nil {
				return fmt.Errorf("option --%s: bad Min %q", o.Name, o.Min)
			}
		}
		if o.Max != "" {
			if hi, err = parse(o.Max); err != nil {
				return fmt.Errorf("option --%s: bad Max %q", o.Name, o.Max)
			}
		}
		return nil
	}
	number := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	switch p := o.Field(c).(type) {
	case *string:
		if len(o.Values) > 0 && *p != "" && !slices.Contains(o.Values, *p) {
			return fmt.Errorf("--%s must be %s, not %q", o.Name, orList(o.Values), *p)
		}
		return nil
	case *[]string, Lines:
		return nil
	case *time.Duration:
		v = float64(*p)
		if err := bounds(func(s string) (float64, error) { d, err := time.ParseDuration(s); return float64(d), err }); err != nil {
			return err
		}
	case *int:
		v = float64(*p)
		if err := bounds(number); err != nil {
			return err
		}
	case *int64:
		v = float64(*p)
		if err := bounds(number); err != nil {
			return err
		}
	case *float64:
		v = *p
		if err := bounds(number); err != nil {
			return err
		}
		if math.IsNaN(v) {
			return fmt.Errorf("--%s: NaN is not a number", o.Name)
		}
	}
	if (o.Off && v < 0) || (o.Auto && v == 0) {
		return nil
	}
	if v < lo || v > hi {
		return fmt.Errorf("--%s: %s is out of range: %s", o.Name, o.Format(c), o.Accepts())
	}
	return nil
}

// Format writes the option's value in c as it would be given on the
// command line: off, auto, a duration such as 15s, a list joined.
func (o *Option[C]) Format(c *C) string {
	switch p := o.Field(c).(type) {
	case *string:
		return *p
	case *[]string:
		return strings.Join(*p, ",")
	case Lines:
		return strings.Join(p.Lines(), "\n")
	case *time.Duration:
		if o.Off && *p < 0 {
			return "off"
		}
		return FormatDuration(*p)
	case *int:
		return o.formatNumber(float64(*p))
	case *int64:
		return o.formatNumber(float64(*p))
	case *float64:
		return o.formatNumber(*p)
	}
	return ""
}

func (o *Option[C]) formatNumber(n float64) string {
	switch {
	case o.Off && n < 0:
		return "off"
	case o.Auto && n == 0:
		return "auto"
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

// FormatDuration writes d without trailing zero units: 24h, 2m, 1h30m.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(raw string) []string {
	var out []string
	for _, s := range strings.Split(raw, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// orList joins values as "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
