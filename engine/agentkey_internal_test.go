//go:build unix

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// openGenerated opens a gateway on cfg with no configured agent key, so
// that it generates or loads one; the caller closes it.
func openGenerated(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.AgentKey = ""
	srv, err := Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// settingsOf returns every row of the settings table.
func settingsOf(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range []string{agentKeySetting, agentKeyHashSetting} {
		if v, ok, err := st.Setting(context.Background(), k); err != nil {
			t.Fatal(err)
		} else if ok {
			out[k] = v
		}
	}
	return out
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestGeneratedAgentKeyAtRest: a generated key is written to a 0600 key
// file beside the database, which holds only its hash; a later start reads
// the file to print the key. (Without the file, the key is rotated:
// TestDeletingTheKeyFileRotatesTheKey.)
func TestGeneratedAgentKeyAtRest(t *testing.T) {
	cfg := testConfig(t)
	srv := openGenerated(t, cfg)
	key := srv.Engine.AgentKey()
	if !strings.HasPrefix(key, "tga_") || len(key) != generatedKeyLen {
		t.Fatalf("generated key %q", key)
	}
	settings := settingsOf(t, srv.Store)
	if _, plain := settings[agentKeySetting]; plain || settings[agentKeyHashSetting] != sha256Hex(key) {
		t.Errorf("settings %v, want only the key's hash", settings)
	}
	file := AgentKeyFile(cfg.DBPath)
	if srv.Engine.AgentKeyFile() != file {
		t.Errorf("key file %q, want %q", srv.Engine.AgentKeyFile(), file)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", info.Mode().Perm())
	}
	if b, _ := os.ReadFile(file); strings.TrimSpace(string(b)) != key {
		t.Errorf("key file holds %q, want %q", b, key)
	}
	if !srv.Engine.IsAgentKey(key) || srv.Engine.IsAgentKey(key+"x") || srv.Engine.IsAgentKey("") {
		t.Error("IsAgentKey does not tell the key")
	}
	srv.Close()

	srv = openGenerated(t, cfg)
	defer srv.Close()
	if got := srv.Engine.AgentKey(); got != key {
		t.Errorf("after a restart the key is %q, want %q", got, key)
	}
	if !srv.Engine.core.holdsAgentKey("http://x/#agent_key="+key+"&y") || srv.Engine.core.holdsAgentKey("tga_"+strings.Repeat("A", 43)) {
		t.Error("metadata is not scrubbed of the key")
	}
}

// TestPlainAgentKeyMigrated: a database of an earlier version, which held
// the agent key itself in settings, is migrated at start: the hash is
// stored, the plain key removed, and the key written to the key file.
func TestPlainAgentKeyMigrated(t *testing.T) {
	cfg := testConfig(t)
	const legacy = "tga_an_earlier_versions_plain_key"
	st, err := store.Open(cfg.DBPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(context.Background(), func(tx *store.Tx) error { return tx.PutSetting(agentKeySetting, legacy) }); err != nil {
		t.Fatal(err)
	}
	st.Close()

	srv := openGenerated(t, cfg)
	defer srv.Close()
	settings := settingsOf(t, srv.Store)
	if _, plain := settings[agentKeySetting]; plain || settings[agentKeyHashSetting] != sha256Hex(legacy) {
		t.Errorf("settings %v, want only the hash of %q", settings, legacy)
	}
	if got := srv.Engine.AgentKey(); got != legacy || !srv.Engine.IsAgentKey(legacy) {
		t.Errorf("the key is %q, want %q", got, legacy)
	}
	if b, err := os.ReadFile(AgentKeyFile(cfg.DBPath)); err != nil || strings.TrimSpace(string(b)) != legacy {
		t.Errorf("key file: %q, %v", b, err)
	}
}

// TestConfiguredAgentKeyNotStored: a configured key is used as given,
// stored nowhere, and written to no file.
func TestConfiguredAgentKeyNotStored(t *testing.T) {
	cfg := testConfig(t)
	srv, err := Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Engine.AgentKey() != AgentKeyForTest || !srv.Engine.IsAgentKey(AgentKeyForTest) {
		t.Errorf("configured key: %q", srv.Engine.AgentKey())
	}
	if s := settingsOf(t, srv.Store); len(s) != 0 {
		t.Errorf("settings %v, want none", s)
	}
	if _, err := os.Stat(AgentKeyFile(cfg.DBPath)); err == nil {
		t.Error("a key file was written for a configured key")
	}
}

// TestDatabaseFilesPrivate: the database, its -wal and its -shm are created
// 0600 even under a permissive umask.
func TestDatabaseFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	cfg := testConfig(t)
	srv := openGenerated(t, cfg)
	defer srv.Close()
	if _, err := srv.Engine.Sessions.CreateSession(context.Background(), toolgate.CreateSessionRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{cfg.DBPath, cfg.DBPath + "-wal", cfg.DBPath + "-shm"} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", path, info.Mode().Perm())
		}
	}
}
