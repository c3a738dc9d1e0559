//go:build unix

package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyFileHolds returns what the key file holds, trimmed.
func keyFileHolds(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// generatedOnce opens a gateway that generates its key, and returns the
// key after closing it.
func generatedOnce(t *testing.T, cfg Config) string {
	t.Helper()
	srv := openGenerated(t, cfg)
	key := srv.Engine.AgentKey()
	srv.Close()
	return key
}

// TestBadKeyFileDoesNotStopTheStart: a key file left empty (a start that
// stopped between creating and writing it, in an earlier version) or
// holding something that is not a generated key, with no hash stored, does
// not stop the gateway nor become the key: a new key is generated and
// replaces the file.
func TestBadKeyFileDoesNotStopTheStart(t *testing.T) {
	for _, junk := range []string{"", "\n", "short", "tga_" + strings.Repeat("A", 20)} {
		cfg := testConfig(t)
		file := AgentKeyFile(cfg.DBPath)
		if err := os.WriteFile(file, []byte(junk), 0o600); err != nil {
			t.Fatal(err)
		}
		srv := openGenerated(t, cfg)
		key := srv.Engine.AgentKey()
		if !isGeneratedKey(key) || srv.Engine.IsAgentKey(strings.TrimSpace(junk)) {
			t.Errorf("key file %q: the key is %q", junk, key)
		}
		if got := keyFileHolds(t, file); got != key {
			t.Errorf("key file %q: it now holds %q, want the new key %q", junk, got, key)
		}
		if settingsOf(t, srv.Store)[agentKeyHashSetting] != sha256Hex(key) {
			t.Errorf("key file %q: the stored hash is not the new key's", junk)
		}
		srv.Close()
	}
}

// TestDeletingTheKeyFileRotatesTheKey: with the key file deleted (or cut
// short), the next start generates a new key, writes it to the file and
// stores its hash: the old key no longer opens the API.
func TestDeletingTheKeyFileRotatesTheKey(t *testing.T) {
	cfg := testConfig(t)
	file := AgentKeyFile(cfg.DBPath)
	old := generatedOnce(t, cfg)
	for _, damage := range []func(){
		func() { os.Remove(file) },
		func() { os.WriteFile(file, []byte(keyFileHolds(t, file)[:20]), 0o600) },
	} {
		damage()
		srv := openGenerated(t, cfg)
		key := srv.Engine.AgentKey()
		if !isGeneratedKey(key) || key == old {
			t.Fatalf("after the key file went, the key is %q (old %q)", key, old)
		}
		if srv.Engine.IsAgentKey(old) {
			t.Error("the old key still opens the API after its key file went")
		}
		if got := keyFileHolds(t, file); got != key {
			t.Errorf("key file holds %q, want %q", got, key)
		}
		if settingsOf(t, srv.Store)[agentKeyHashSetting] != sha256Hex(key) {
			t.Error("the stored hash is not the new key's")
		}
		srv.Close()
		old = key
	}
}

// TestKeyFileWithANewerKeyIsAdopted: a key file holding a generated key
// other than the stored hash's (a rotation that stopped after writing the
// file, before storing the hash) is adopted and its hash stored.
func TestKeyFileWithANewerKeyIsAdopted(t *testing.T) {
	cfg := testConfig(t)
	file := AgentKeyFile(cfg.DBPath)
	old := generatedOnce(t, cfg)
	newer := agentKeyPrefix + newSecret()
	if err := os.WriteFile(file, []byte(newer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := openGenerated(t, cfg)
	defer srv.Close()
	if srv.Engine.AgentKey() != newer || srv.Engine.IsAgentKey(old) {
		t.Errorf("key %q, old key still good: %v; want the file's", srv.Engine.AgentKey(), srv.Engine.IsAgentKey(old))
	}
	if settingsOf(t, srv.Store)[agentKeyHashSetting] != sha256Hex(newer) {
		t.Error("the stored hash is not the file's key's")
	}
}

// TestConfiguredKeyRevokesTheGenerated: a start with --agent-key removes
// the generated key's hash and file, so that once the flag is dropped the
// old generated key does not come back: a new one is generated.
func TestConfiguredKeyRevokesTheGenerated(t *testing.T) {
	cfg := testConfig(t)
	file := AgentKeyFile(cfg.DBPath)
	old := generatedOnce(t, cfg)

	withFlag := cfg
	withFlag.AgentKey = "tga_chosen_by_the_operator"
	srv := openWith(t, withFlag)
	if srv.Engine.IsAgentKey(old) || !srv.Engine.IsAgentKey(withFlag.AgentKey) {
		t.Error("with --agent-key, the generated key still opens the API or the given one does not")
	}
	if s := settingsOf(t, srv.Store); len(s) != 0 {
		t.Errorf("settings %v after --agent-key, want none", s)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the key file is still there after --agent-key: %v", err)
	}
	srv.Close()

	srv = openGenerated(t, cfg)
	defer srv.Close()
	if key := srv.Engine.AgentKey(); key == old || !isGeneratedKey(key) || srv.Engine.IsAgentKey(old) {
		t.Errorf("the flag dropped: key %q, the old generated key good again: %v", key, srv.Engine.IsAgentKey(old))
	}
}

// TestKeyFileWrittenWhole: the key file appears whole or not at all: it is
// written to a temporary file beside it, then linked into place, which
// never overwrites an existing file; temporary files a stopped start left
// are removed at the next.
func TestKeyFileWrittenWhole(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gw.db.agent-key")
	if err := writeAgentKeyFile(file, "tga_first", false); err != nil {
		t.Fatal(err)
	}
	if err := writeAgentKeyFile(file, "tga_second", false); err == nil {
		t.Error("a key file was written over an existing one")
	}
	if got := keyFileHolds(t, file); got != "tga_first" {
		t.Errorf("key file holds %q, want tga_first", got)
	}
	if info, _ := os.Stat(file); info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", info.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files beside the key file: %v, want none", entries)
	}

	cfg := testConfig(t)
	stale := AgentKeyFile(cfg.DBPath) + ".tmp-123"
	if err := os.WriteFile(stale, []byte("tga_half"), 0o600); err != nil {
		t.Fatal(err)
	}
	generatedOnce(t, cfg)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a stopped start's temporary key file is still there: %v", err)
	}
}

// openWith opens a gateway on cfg as it is; the caller closes it.
func openWith(t *testing.T, cfg Config) *Server {
	t.Helper()
	srv, err := Open(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
