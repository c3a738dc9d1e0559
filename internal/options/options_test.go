package options

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// conf is a configuration of each kind of field.
type conf struct {
	Name  string
	Level string
	Hosts []string
	Lines lines
	Wait  time.Duration
	Count int
	Share int
	Rate  float64
	Bytes int64
}

type lines []string

func (l *lines) SetLines(s []string) error { *l = s; return nil }
func (l *lines) Lines() []string           { return *l }

func table() Table[conf] {
	return Table[conf]{
		{Name: "name", Env: "T_NAME", Key: "name", Default: "x", Help: "h", Field: func(c *conf) any { return &c.Name }},
		{Name: "level", Env: "T_LEVEL", Key: "level", Default: "info", Values: []string{"info", "debug"}, Help: "h", Field: func(c *conf) any { return &c.Level }},
		{Name: "hosts", Env: "T_HOSTS", Key: "hosts", Help: "h", Field: func(c *conf) any { return &c.Hosts }},
		{Name: "line", Env: "T_LINES", Key: "lines", Help: "h", Field: func(c *conf) any { return &c.Lines }},
		{Name: "wait", Env: "T_WAIT", Key: "wait", Default: "15s", Min: "1s", Max: "1h", Legacy: LegacyZeroDefault, Help: "h", Field: func(c *conf) any { return &c.Wait }},
		{Name: "count", Env: "T_COUNT", Key: "count", Default: "4", Min: "1", Max: "100", Off: true, Legacy: LegacyNotPositiveOff, Help: "h",
			Aliases: []Alias{{Name: "old-count", Env: "T_OLD_COUNT", Key: "old_count"}}, Field: func(c *conf) any { return &c.Count }},
		{Name: "share", Env: "T_SHARE", Key: "share", Default: "auto", Min: "1", Off: true, Auto: true, Legacy: LegacyZeroAutoNegativeOff, Help: "h", Field: func(c *conf) any { return &c.Share }},
		{Name: "rate", Env: "T_RATE", Key: "rate", Default: "0.5", Max: "10", Off: true, Legacy: LegacyNotPositiveOff, Help: "h", Field: func(c *conf) any { return &c.Rate }},
		{Name: "bytes", Env: "T_BYTES", Key: "bytes", Default: "1024", Min: "2", Help: "h", Field: func(c *conf) any { return &c.Bytes }},
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestSetRefusesWhatItCannotMean: off where a limit cannot be off,
// unlimited for a rate, fractions for counts, NaN, numbers too large.
func TestSetRefusesWhatItCannotMean(t *testing.T) {
	tb := table()
	c := tb.Defaults()
	for _, tc := range []struct {
		opt int
		raw string
	}{{4, "off"}, {7, "unlimited"}, {5, "1.5"}, {7, "NaN"}, {5, "1e12"}, {8, "auto"}, {4, "15"}, {5, "many"}} {
		if _, err := tb[tc.opt].Set(&c, tc.raw); err == nil {
			t.Errorf("--%s %s: no error", tb[tc.opt].Name, tc.raw)
		}
	}
	if w, err := tb[5].Set(&c, "unlimited"); err != nil || w != "" || c.Count != -1 || tb[5].Format(&c) != "off" {
		t.Errorf("count unlimited: %d %q %v", c.Count, w, err)
	}
}

// TestCheckRanges: values outside the range are reported, each; off
// and auto pass where allowed.
func TestCheckRanges(t *testing.T) {
	tb := table()
	c := tb.Defaults()
	if errs := tb.Check(&c, nil); len(errs) > 0 {
		t.Fatalf("defaults: %v", errs)
	}
	if c.Share != 0 || c.Wait != 15*time.Second || c.Rate != 0.5 {
		t.Fatalf("defaults: %+v", c)
	}
	c.Wait, c.Count, c.Rate, c.Bytes, c.Level = -time.Hour, 101, 11, 1, "loud"
	errs := tb.Check(&c, nil)
	if len(errs) != 5 {
		t.Fatalf("%d errors, want 5: %v", len(errs), errs)
	}
	c = tb.Defaults()
	c.Count, c.Share, c.Rate = -1, -1, -1
	if errs := tb.Check(&c, nil); len(errs) > 0 {
		t.Errorf("off: %v", errs)
	}
}

// TestLoadPrecedenceAndAliases: flag over variable over file over
// default; an old name works and warns; a repeated list flag replaces
// the variable's list.
func TestLoadPrecedenceAndAliases(t *testing.T) {
	tb := table()
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("name: file\nwait: 2s\nold_count: 7\nhosts: [a, b]\nlines:\n  - one\n  - two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := tb.Defaults()
	loaded, err := tb.Load(&c, Sources{
		Args:      []string{"--config", file, "--wait", "3s", "--line", "x", "--line", "y"},
		LookupEnv: env(map[string]string{"T_WAIT": "4s", "T_RATE": "0", "T_LINES": "p\nq"}),
		Command:   "t", ConfigFlag: "config", ConfigEnv: "T_CONFIG",
	})
	if err != nil || c.Name != "file" || c.Wait != 3*time.Second || c.Count != 7 || c.Rate != -1 ||
		!slices.Equal(c.Hosts, []string{"a", "b"}) || !slices.Equal(c.Lines, lines{"x", "y"}) {
		t.Fatalf("%+v, %v", c, err)
	}
	all := strings.Join(loaded.Warnings, "\n")
	if loaded.From["wait"] != "--wait" || loaded.From["name"] != file+":1: name" || loaded.From["rate"] != "T_RATE" {
		t.Errorf("from: %q", loaded.From)
	}
	if !strings.Contains(all, "old_count is an old name kept for one more release: say count") || !strings.Contains(all, "T_RATE: --rate 0 means off") {
		t.Errorf("warnings: %s", all)
	}
	c = tb.Defaults()
	if _, err := tb.Load(&c, Sources{Args: []string{"-h"}, LookupEnv: env(nil), Output: &strings.Builder{}}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	if _, err := tb.Load(&c, Sources{Args: []string{"stray"}, LookupEnv: env(nil)}); err == nil {
		t.Error("a stray argument is accepted")
	}
}

// TestFormatDuration drops trailing zero units.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 2 * time.Minute: "2m", 90 * time.Minute: "1h30m", 100 * time.Millisecond: "100ms", 15 * time.Second: "15s"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
