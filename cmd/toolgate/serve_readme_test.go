package main

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// serveHelp returns what toolgate serve -h prints.
func serveHelp(t *testing.T) string {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "help")
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = out // the flag set prints its usage to os.Stderr
	_, _, err = serveFlags([]string{"-h"})
	os.Stderr = stderr
	if err != flag.ErrHelp {
		t.Fatalf("serve -h: %v, want flag.ErrHelp", err)
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeFlagRows returns the flags and environment variables README.md's
// flag table names: a row's flags in its first cell, its variables in the
// second.
func readmeFlagRows(t *testing.T) (flags, envs []string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	flagName, envName := regexp.MustCompile("`--([a-z0-9-]+)`"), regexp.MustCompile("`(TOOLGATE_[A-Z0-9_]+)`")
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(line, "|")
		for _, m := range flagName.FindAllStringSubmatch(cells[1], -1) {
			flags = append(flags, m[1])
		}
		for _, m := range envName.FindAllStringSubmatch(cells[2], -1) {
			envs = append(envs, m[1])
		}
	}
	return flags, envs
}

// TestReadmeListsEveryServeFlag: every flag toolgate serve -h lists is in
// README.md's flag table with its environment variable, and the table
// names no flag serve does not have.
func TestReadmeListsEveryServeFlag(t *testing.T) {
	help := serveHelp(t)
	tableFlags, tableEnvs := readmeFlagRows(t)
	var serveFlagNames []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		serveFlagNames = append(serveFlagNames, m[1])
		if !slices.Contains(tableFlags, m[1]) {
			t.Errorf("--%s is not in README.md's flag table", m[1])
		}
	}
	if len(serveFlagNames) < 20 {
		t.Fatalf("read %d flags from serve -h, want them all:\n%s", len(serveFlagNames), help)
	}
	for _, m := range regexp.MustCompile(`\(env (TOOLGATE_[A-Z0-9_]+)\)`).FindAllStringSubmatch(help, -1) {
		if !slices.Contains(tableEnvs, m[1]) {
			t.Errorf("%s is not in README.md's flag table", m[1])
		}
	}
	for _, f := range tableFlags {
		if !slices.Contains(serveFlagNames, f) {
			t.Errorf("README.md's flag table names --%s, which toolgate serve does not have", f)
		}
	}
}
