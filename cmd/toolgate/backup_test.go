package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/store"
)

// serveOn starts `toolgate serve` on db with no --agent-key and returns
// its agent key line ("agent key: ...") and the process, killed when the
// test ends.
func serveOn(t *testing.T, db string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(gatewaytest.Binary(t), "serve", "--addr", "127.0.0.1:0", "--db", db)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "agent key: ") {
				lines <- sc.Text()
			}
		}
	}()
	select {
	case line := <-lines:
		return line, cmd
	case <-time.After(30 * time.Second):
		t.Fatalf("no agent key line within 30 s:\n%s", stderr.String())
	}
	return "", nil
}

// TestBackupKeepsTheGeneratedAgentKey: a gateway that generated its agent
// key keeps it in a key file beside the database; toolgate backup copies
// it beside the backup, and a gateway started on the restored database
// after the original was killed and its files deleted has the same key,
// with no rotation.
func TestBackupKeepsTheGeneratedAgentKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "toolgate.db")
	keyLine, proc := serveOn(t, db)
	backup := filepath.Join(t.TempDir(), "nightly.db")
	var out bytes.Buffer
	if err := runBackup(context.Background(), []string{"--db", db, "--to", backup}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "agent key file copied to "+backup+".agent-key") {
		t.Fatalf("backup said:\n%s", out.String())
	}
	if fi, err := os.Stat(backup + ".agent-key"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file of the backup: %v %v", fi, err)
	}
	proc.Process.Signal(syscall.SIGKILL)
	proc.Wait()
	for _, suffix := range []string{"", "-wal", "-shm", ".agent-key"} {
		if err := os.Remove(db + suffix); err != nil {
			t.Fatal(err)
		}
	}
	out.Reset()
	if err := runRestore(context.Background(), []string{"--db", db, "--from", backup}, &out, &out); err != nil {
		t.Fatal(err)
	}
	again, _ := serveOn(t, db)
	if again != keyLine {
		t.Fatalf("agent key after restore:\n%s\nbefore:\n%s", again, keyLine)
	}
}

// TestBackupCommandRefusals: the commands' own refusals, each naming what
// to do, with nothing written; the database is found as toolgate serve
// finds it, in a --config file holding serve's other settings too.
func TestBackupCommandRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "toolgate.db")
	_, proc := serveOn(t, db)
	defer func() { proc.Process.Kill(); proc.Wait() }()
	config := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(config, []byte("addr: 127.0.0.1:9999\nheartbeat: 5s\ndb: "+db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte("db: "+db+"\nheartbeet: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyTaken := filepath.Join(dir, "keytaken.db")
	if err := os.WriteFile(keyTaken+".agent-key", []byte("someone else's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromConfig := filepath.Join(dir, "from-config.db")
	for _, tc := range []struct {
		name    string
		restore bool
		args    []string
		env     string
		want    string
	}{
		{name: "no --to", args: []string{"--db", db}, want: "--to FILE is required"},
		{name: "unexpected argument", args: []string{"--db", db, "--to", filepath.Join(dir, "x.db"), "extra"}, want: "unexpected arguments"},
		{name: "the database itself", args: []string{"--db", db, "--to", db}, want: "the database's own file"},
		{name: "key file of the target taken", args: []string{"--db", db, "--to", keyTaken}, want: "give --force"},
		{name: "postgres from the environment", args: []string{"--to", filepath.Join(dir, "pg.db")}, env: "postgres://u@127.0.0.1/toolgate", want: "pg_dump"},
		{name: "unknown key in the config file", args: []string{"--config", typo, "--to", filepath.Join(dir, "y.db")}, want: `unknown key "heartbeet"`},
		{name: "restore without --from", restore: true, args: []string{"--db", db}, want: "--from FILE is required"},
		{name: "restore from nothing", restore: true, args: []string{"--db", filepath.Join(dir, "new.db"), "--from", filepath.Join(dir, "none.db")}, want: "no such file"},
		{name: "restore over a serving gateway", restore: true, args: []string{"--config", config, "--from", db + ".copy", "--force"}, want: "open in a running gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("TOOLGATE_DB", tc.env)
			}
			var out bytes.Buffer
			run := runBackup
			if tc.restore {
				run = runRestore
			}
			err := run(context.Background(), tc.args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q\n%s", err, tc.want, out.String())
			}
		})
		if tc.name == "unknown key in the config file" {
			// The same configuration as serve's is read: a backup from it
			// makes the copy the next case restores from.
			var out bytes.Buffer
			if err := runBackup(context.Background(), []string{"--config", config, "--to", db + ".copy"}, &out, &out); err != nil {
				t.Fatal(err)
			}
			if err := runBackup(context.Background(), []string{"--config", config, "--to", fromConfig}, &out, &out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := os.Stat(keyTaken); err == nil {
		t.Fatal("a refused backup wrote its target")
	}
	if b, _ := os.ReadFile(keyTaken + ".agent-key"); string(b) != "someone else's\n" {
		t.Fatalf("a refused backup changed an existing key file: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.db")); err == nil {
		t.Fatal("a refused restore created the database")
	}
}

// TestBackupForceDropsAStaleKeyFile: a backup made with --force of a
// database that has no key file (the gateway is given --agent-key now)
// removes the key file an earlier backup left beside the target, so that
// restore cannot bring back a key the gateway no longer has.
func TestBackupForceDropsAStaleKeyFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "toolgate.db")
	st, err := store.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	to := filepath.Join(dir, "nightly.db")
	if err := os.WriteFile(db+".agent-key", []byte("tga_retired_key_of_earlier_days\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runBackup(context.Background(), []string{"--db", db, "--to", to}, &out, &out); err != nil {
		t.Fatal(err, out.String())
	}
	if err := os.Remove(db + ".agent-key"); err != nil {
		t.Fatal(err)
	}
	if err := runBackup(context.Background(), []string{"--db", db, "--to", to, "--force"}, &out, &out); err != nil {
		t.Fatal(err, out.String())
	}
	if b, err := os.ReadFile(to + ".agent-key"); !os.IsNotExist(err) {
		t.Fatalf("the backup of a database without a key file has one beside it: %q (%v)", b, err)
	}
}
