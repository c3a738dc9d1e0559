package main

import (
	"bufio"
	"bytes"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/options"
	"github.com/toolgate/toolgate/server"
)

var update = flag.Bool("update", false, "write docs/CONFIGURATION.md from the option table")

const configDocPath = "../../docs/CONFIGURATION.md"

// TestConfigurationDoc: docs/CONFIGURATION.md is the option table written
// out; -update writes it.
func TestConfigurationDoc(t *testing.T) {
	want := configurationDoc()
	if *update {
		if err := os.WriteFile(configDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("docs/CONFIGURATION.md is out of step with the option table (server/options.go): run go generate ./cmd/toolgate")
	}
}

// serveHelp returns what toolgate serve -h prints.
func serveHelp(t *testing.T) string {
	t.Helper()
	var out bytes.Buffer
	table := server.Options()
	cfg := table.Defaults()
	_, err := table.Load(&cfg, options.Sources{Args: []string{"-h"}, Command: "toolgate serve", ConfigFlag: "config", ConfigEnv: "TOOLGATE_CONFIG", Output: &out})
	if err != flag.ErrHelp {
		t.Fatalf("serve -h: %v, want flag.ErrHelp", err)
	}
	return out.String()
}

// TestEveryOptionHasAFlagAndADocRow: each option of the table is a flag
// of serve -h with its variable, file key and default, and a row of
// docs/CONFIGURATION.md; names are unique, old names too; no help text
// cites an issue.
func TestEveryOptionHasAFlagAndADocRow(t *testing.T) {
	help := serveHelp(t)
	doc, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatal(err)
	}
	table := server.Options()
	if len(table) < 45 {
		t.Fatalf("the table has %d options, want all of serve's", len(table))
	}
	seen := map[string]string{}
	unique := func(kind, name, opt string) {
		if prev, ok := seen[kind+name]; ok {
			t.Errorf("%s %q is both --%s's and --%s's", kind, name, prev, opt)
		}
		seen[kind+name] = opt
	}
	issue := regexp.MustCompile(`(?i)\bissue\s*#?\d+`)
	for _, o := range table {
		unique("flag", o.Name, o.Name)
		unique("variable", o.Env, o.Name)
		unique("key", o.Key, o.Name)
		for _, a := range o.Aliases {
			unique("flag", a.Name, o.Name)
			unique("variable", a.Env, o.Name)
			unique("key", a.Key, o.Name)
		}
		if !strings.HasPrefix(o.Env, "TOOLGATE_") || o.Help == "" || o.Group == "" {
			t.Errorf("--%s: variable %q, help %q, group %q", o.Name, o.Env, o.Help, o.Group)
		}
		entry := "  --" + o.Name + "\n"
		i := strings.Index(help, entry)
		if i < 0 {
			t.Errorf("serve -h does not list --%s", o.Name)
			continue
		}
		block := help[i+len(entry):]
		if j := strings.Index(block, "\n  --"); j >= 0 {
			block = block[:j]
		}
		if !strings.Contains(block, "default "+o.DefaultText()) || !strings.Contains(block, "env "+o.Env) || !strings.Contains(block, "file key "+o.Key) {
			t.Errorf("serve -h says of --%s:\n%s\nwant its default, variable and file key", o.Name, block)
		}
		row := "| `--" + o.Name + "` | `" + o.Env + "` | `" + o.Key + "` |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/CONFIGURATION.md has no row %s", row)
		}
		if issue.MatchString(o.Help) {
			t.Errorf("--%s's help cites an issue: %s", o.Name, o.Help)
		}
	}
	if issue.MatchString(help) {
		t.Errorf("serve -h cites an issue:\n%s", help)
	}
	// The defaults are the server's.
	if def := server.DefaultConfig(); def.MaxToolsPerSess != 256 || def.Heartbeat != 15*time.Second || def.MaxConnections != 0 || def.MaxRunsPerAddress != 0 || def.SessionRate != 2 {
		t.Errorf("DefaultConfig from the table: %+v", def)
	}
}

// clearEnv unsets the table's variables (old names too) for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, o := range server.Options() {
		for _, env := range append([]string{o.Env}, aliasEnvs(o.Aliases)...) {
			t.Setenv(env, "")
			os.Unsetenv(env)
		}
	}
	t.Setenv("TOOLGATE_CONFIG", "")
	os.Unsetenv("TOOLGATE_CONFIG")
}

func aliasEnvs(aliases []options.Alias) []string {
	var out []string
	for _, a := range aliases {
		out = append(out, a.Env)
	}
	return out
}

// writeConfig writes a config file into a temp dir.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigPrecedence: a flag wins over its variable, the variable over
// the file, the file over the default; --config or TOOLGATE_CONFIG names
// the file.
func TestConfigPrecedence(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, "heartbeat: 5s\npoll_wait: 6s\nsession_grace: 7s\nmax_runs_per_session: 3\nallowed_hosts: [a.example.com, b.example.com]\n")
	t.Setenv("TOOLGATE_POLL_WAIT", "8s")
	t.Setenv("TOOLGATE_SESSION_GRACE", "9s")
	cfg, warnings, err := serveFlags([]string{"--config", file, "--session-grace", "10s"})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("serve --config: %v, warnings %q", err, warnings)
	}
	if cfg.Heartbeat != 5*time.Second || cfg.PollWait != 8*time.Second || cfg.SessionGrace != 10*time.Second ||
		cfg.MaxRunsPerSession != 3 || strings.Join(cfg.AllowedHosts, ",") != "a.example.com,b.example.com" || cfg.SweepInterval != 30*time.Second {
		t.Errorf("heartbeat (file) %s, poll wait (env over file) %s, grace (flag over env over file) %s, runs %d, hosts %q, sweep (default) %s",
			cfg.Heartbeat, cfg.PollWait, cfg.SessionGrace, cfg.MaxRunsPerSession, cfg.AllowedHosts, cfg.SweepInterval)
	}
	t.Setenv("TOOLGATE_CONFIG", file)
	if cfg, _, err := serveFlags(nil); err != nil || cfg.Heartbeat != 5*time.Second {
		t.Errorf("TOOLGATE_CONFIG: heartbeat %s, %v", cfg.Heartbeat, err)
	}
}

// TestConfigFileErrors: an unknown key names itself and its line (all of
// them at once); a bad value names its line; a missing file is an error.
func TestConfigFileErrors(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, "addr: 127.0.0.1:0\nheartbeet: 5s\nmax_tools_per_session: lots\nsesion_ttl: 1h\n")
	_, _, err := serveFlags([]string{"--config", file})
	for _, want := range []string{file + `:2: unknown key "heartbeet"`, file + `:4: unknown key "sesion_ttl"`, file + `:3: max_tools_per_session: "lots" is not a number`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error containing %q", err, want)
		}
	}
	if _, _, err := serveFlags([]string{"--config", filepath.Join(t.TempDir(), "none.yaml")}); err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Errorf("a missing file: %v", err)
	}
	if _, _, err := serveFlags([]string{"--config", writeConfig(t, "- addr\n")}); err == nil || !strings.Contains(err.Error(), "mapping") {
		t.Errorf("a list for a file: %v", err)
	}
	if _, _, err := serveFlags([]string{"--config", writeConfig(t, "addr: a\naddr: b\n")}); err == nil || !strings.Contains(err.Error(), `:2: addr is given twice (first on line 1)`) {
		t.Errorf("a key given twice: %v", err)
	}
}

// TestAllProblemsReportedAtOnce: three bad values from three sources
// give three messages in one error.
func TestAllProblemsReportedAtOnce(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, "max_body_bytes: 10\n")
	t.Setenv("TOOLGATE_HEARTBEAT", "often")
	_, _, err := serveFlags([]string{"--config", file, "--event-retention", "-1h", "--min-timeout", "2m", "--max-timeout", "1m"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--max-body-bytes: 10 is out of range: a whole number from 1024 to 1073741824 (given by " + file + ":1: max_body_bytes)",
		`TOOLGATE_HEARTBEAT: "often" is not a duration`, "--event-retention: -1h is out of range", "--min-timeout 2m0s is above --max-timeout 1m0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got:\n%v\nwant a line containing %q", err, want)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n < 4 {
		t.Errorf("%d messages, want at least 4:\n%v", n, err)
	}
}

// TestNegativeDurationsAreErrors: no duration takes a negative value
// (--event-retention -1h used to prune every event).
func TestNegativeDurationsAreErrors(t *testing.T) {
	clearEnv(t)
	var zero server.Config
	n := 0
	for _, o := range server.Options() {
		if _, ok := o.Field(&zero).(*time.Duration); !ok {
			continue
		}
		n++
		if _, _, err := serveFlags([]string{"--" + o.Name, "-1h"}); err == nil || !strings.Contains(err.Error(), "--"+o.Name+": -1h is out of range") {
			t.Errorf("--%s -1h: %v", o.Name, err)
		}
	}
	if n < 14 {
		t.Errorf("checked %d durations, want all of them", n)
	}
}

// TestOffAutoAndOldSpellings: limits take off (counts also unlimited),
// derived values auto; old names and the old numbers still work, each
// with a warning that says what to write instead.
func TestOffAutoAndOldSpellings(t *testing.T) {
	clearEnv(t)
	cfg, warnings, err := serveFlags([]string{"--address-session-rate", "off", "--max-runs-per-session", "unlimited", "--max-runs-per-address", "off",
		"--max-connections", "auto", "--max-connections-per-address", "off", "--max-run-input-bytes", "off"})
	if err != nil || len(warnings) > 0 || cfg.SessionRate >= 0 || cfg.MaxRunsPerSession >= 0 || cfg.MaxRunsPerAddress >= 0 ||
		cfg.MaxConnections != 0 || cfg.MaxConnectionsPerAddress >= 0 || cfg.MaxRunInputBytes >= 0 {
		t.Fatalf("off and auto: %+v, %q, %v", cfg, warnings, err)
	}
	if cfg, _, err := serveFlags([]string{"--log-level", "WARN", "--http-request-runs", " all"}); err != nil || cfg.LogLevel != "warn" || cfg.HTTPRequestRuns != "all" {
		t.Errorf("values in capitals or with spaces: %q %q, %v", cfg.LogLevel, cfg.HTTPRequestRuns, err)
	}
	for _, bad := range [][]string{{"--address-session-rate", "unlimited"}, {"--max-tools-per-session", "off"}, {"--max-connections", "off"}, {"--run-burst", "auto"}, {"--log-level", "loud"}} {
		if _, _, err := serveFlags(bad); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%q: %v", bad, err)
		}
	}

	file := writeConfig(t, "max_tools: 12\n")
	t.Setenv("TOOLGATE_MAX_STREAM_SESSIONS", "5")
	cfg, warnings, err = serveFlags([]string{"--config", file, "--max-session-runs", "8", "--address-session-burst", "0", "--max-connections-per-address", "-1", "--heartbeat", "0"})
	if err != nil || cfg.MaxSessionRuns != 8 || cfg.MaxToolsPerSess != 12 || cfg.MaxStreamSessions != 5 || cfg.SessionBurst >= 0 ||
		cfg.MaxConnectionsPerAddress >= 0 || cfg.Heartbeat != 15*time.Second {
		t.Fatalf("old names and spellings: %+v, %v", cfg, err)
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{"--max-session-runs is an old name kept for one more release: say --max-runs-all-sessions",
		"TOOLGATE_MAX_STREAM_SESSIONS is an old name kept for one more release: say TOOLGATE_MAX_SESSIONS_PER_STREAM",
		"max_tools is an old name kept for one more release: say max_tools_per_session",
		"--address-session-burst 0 means off, an old spelling accepted for one more release: say off",
		"--max-connections-per-address -1 means off", "--heartbeat 0 means the default (15s)"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings:\n%s\nwant one containing %q", all, want)
		}
	}
}

// TestTheDocsExampleFileLoads: the config file shown in
// docs/CONFIGURATION.md loads and validates as it stands.
func TestTheDocsExampleFileLoads(t *testing.T) {
	clearEnv(t)
	doc := configurationDoc()
	start := strings.Index(doc, "```yaml\n")
	end := strings.Index(doc[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no yaml block")
	}
	cfg, warnings, err := serveFlags([]string{"--config", writeConfig(t, doc[start+8:start+8+end])})
	if err != nil || len(warnings) > 0 || cfg.EventRetention != 72*time.Hour || cfg.SessionRate >= 0 || len(cfg.MCPServers) != 1 {
		t.Fatalf("the docs' example: %+v, %q, %v", cfg, warnings, err)
	}
}

// TestServeWithConfigFile runs the real binary with --config: it serves
// on the file's address, answers /healthz, and logs the warning of an
// old name in the file.
func TestServeWithConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := writeConfig(t, "addr: 127.0.0.1:0\ndb: "+filepath.Join(dir, "toolgate.db")+"\nmax_session_runs: 8\nlog_level: warn\n")
	cmd := exec.Command(gatewaytest.Binary(t), "serve", "--config", file)
	cmd.Env = withoutToolgateEnv(os.Environ())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "toolgate serving on "); ok {
				urls <- url
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatalf("no serving line within 30 s; stderr:\n%s", stderr.String())
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("serving on %s", url)
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if !strings.Contains(stderr.String(), "max_session_runs is an old name kept for one more release: say max_runs_all_sessions") {
		t.Errorf("stderr has no warning of the old key:\n%s", stderr.String())
	}
}

// withoutToolgateEnv drops the TOOLGATE_ variables from env.
func withoutToolgateEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TOOLGATE_") {
			out = append(out, kv)
		}
	}
	return out
}
