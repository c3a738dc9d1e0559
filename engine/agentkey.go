package engine

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/store"
)

// The agent key at rest. The database holds only its SHA-256 (a 256-bit
// random key needs no slower hash), under agentKeyHashSetting; a generated
// key is written, whole or not at all and readable by its owner alone, to
// the key file beside the database (AgentKeyFile), where later starts read
// it. Deleting the key file rotates the key: the next start generates a
// new one and replaces the hash (see keyLoader.load). A key given in the
// configuration is used as it is, stored nowhere, and revokes a generated
// one. Databases of earlier versions held the key itself under
// agentKeySetting: at start it is moved to the key file (when that is
// absent) and replaced by its hash.
const (
	agentKeySetting     = "agent_key" // the plain key, of earlier versions
	agentKeyHashSetting = "agent_key_sha256"
	agentKeyPrefix      = "tga_"
	// generatedKeyLen is the length of a generated key: the prefix and
	// 32 random bytes in unpadded base64url.
	generatedKeyLen = len(agentKeyPrefix) + 43
)

// AgentKey is the caller/admin secret as the engine knows it: the key
// (configured, read from the key file, or generated) and its hash. It is
// set once, by LoadAgentKey, and only read after.
type AgentKey struct {
	plain string   // the key
	hash  [32]byte // SHA-256 of the key
	file  string   // the key file, "" for a database in memory
}

// Plain returns the key.
func (k *AgentKey) Plain() string { return k.plain }

// File returns the file a generated key is kept in ("" for a database in
// memory).
func (k *AgentKey) File() string { return k.file }

// matches reports, in constant time, whether secret is the key.
func (k *AgentKey) matches(secret string) bool {
	sum := sha256.Sum256([]byte(secret))
	return secret != "" && subtle.ConstantTimeCompare(sum[:], k.hash[:]) == 1
}

// foundIn reports whether s holds the key anywhere.
func (k *AgentKey) foundIn(s string) bool {
	return k.plain != "" && strings.Contains(s, k.plain)
}

// AgentKey returns the caller/admin secret: configured, read from the key
// file, or generated at this start.
func (e *Engine) AgentKey() string { return e.core.agentKey.plain }

// AgentKeyFile returns the file a generated agent key is kept in ("" for
// a database in memory).
func (e *Engine) AgentKeyFile() string { return e.core.agentKey.file }

// isAgentKey reports whether secret is the agent key, comparing hashes in
// constant time.
func (e *core) isAgentKey(secret string) bool { return e.agentKey.matches(secret) }

// IsAgentKey reports whether secret is the agent key (see core.isAgentKey).
func (e *Engine) IsAgentKey(secret string) bool { return e.core.isAgentKey(secret) }

// holdsAgentKey reports whether s holds the agent key anywhere (client
// metadata is scrubbed of it).
func (e *core) holdsAgentKey(s string) bool { return e.agentKey.foundIn(s) }

// LoadAgentKey reads, or generates, the agent key of the database st
// (see keyLoader.load): configured is the key given in the configuration
// ("" for none), file the key file (AgentKeyFile in package server; "" for
// a database in memory). The process loads it before it builds the tools
// and the engine, which both need it.
func LoadAgentKey(ctx context.Context, st *store.Store, configured, file string, log *slog.Logger) (*AgentKey, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &keyLoader{st: st, log: log, configured: configured, file: file, key: &AgentKey{}}
	if err := l.load(ctx); err != nil {
		return nil, err
	}
	return l.key, nil
}

// keyLoader loads the agent key at start.
type keyLoader struct {
	st         *store.Store
	log        *slog.Logger
	configured string
	file       string
	key        *AgentKey
}

// load moves an earlier version's plain key out of the database,
// then takes the configured key, or the key of the key file, or generates
// one:
//
//   - A configured key (--agent-key) is used as given and revokes a
//     generated one: its hash and key file are removed (the file first),
//     so that the old key does not come back when the flag is dropped.
//   - A key file whose key matches the stored hash gives the key.
//   - A key file holding a generated key ("tga_" and 43 characters) with
//     another hash stored, or none, is adopted and its hash stored: a
//     start or rotation that stopped between writing the file and storing
//     the hash.
//   - Otherwise (no key file, or one empty or malformed) a new key is
//     generated, written to the key file first and its hash stored after.
//     When a hash was stored, this is a rotation: the old key stops
//     working, logged as a warning. Deleting the key file is how an
//     operator rotates a generated key.
func (l *keyLoader) load(ctx context.Context) error {
	l.key.file = l.file
	removeStaleKeyFiles(l.key.file)
	stored, err := l.migratePlainAgentKey(ctx)
	if err != nil {
		return err
	}
	if l.configured != "" {
		l.setAgentKey(l.configured)
		return l.revokeGeneratedAgentKey(ctx, stored)
	}
	fromFile, found, err := l.readAgentKeyFile()
	if err != nil {
		return err
	}
	switch {
	case fromFile != "" && hashToken(fromFile) == stored:
		l.setAgentKey(fromFile)
		return nil
	case isGeneratedKey(fromFile):
		if stored != "" {
			l.log.Warn("the agent key file holds another key than the one whose hash is stored: it is adopted, and the old key no longer works",
				"key_file", l.key.file)
		}
		l.setAgentKey(fromFile)
	default:
		if found {
			l.log.Warn("the agent key file is empty or malformed (a start that stopped while writing it?): a new key replaces it",
				"key_file", l.key.file)
		}
		key := agentKeyPrefix + newSecret()
		if err := writeAgentKeyFile(l.key.file, key, found); err != nil {
			return err
		}
		if stored != "" {
			l.log.Warn("AGENT KEY ROTATED: the key file was missing or damaged, so a new agent key was generated; the old key no longer works, and callers need the new one from the key file",
				"key_file", l.key.file)
		}
		l.setAgentKey(key)
	}
	if err := l.st.Write(ctx, func(tx *store.Tx) error { return tx.PutSetting(agentKeyHashSetting, hashToken(l.key.plain)) }); err != nil {
		return fmt.Errorf("store the agent key's hash: %w", err)
	}
	return nil
}

// revokeGeneratedAgentKey removes a generated key, its key file and its
// stored hash, when a key is configured. The file goes first: a hash left
// alone by a crash is replaced at the next start without the flag (as for
// a deleted key file), while a file left alone would be adopted.
func (l *keyLoader) revokeGeneratedAgentKey(ctx context.Context, stored string) error {
	removed := false
	if l.key.file != "" {
		err := os.Remove(l.key.file)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the generated agent key's file, which --agent-key replaces: %w", err)
		}
		if removed = err == nil; removed {
			syncDir(filepath.Dir(l.key.file))
		}
	}
	if stored != "" {
		if err := l.st.Write(ctx, func(tx *store.Tx) error { return tx.DeleteSetting(agentKeyHashSetting) }); err != nil {
			return fmt.Errorf("remove the generated agent key's hash, which --agent-key replaces: %w", err)
		}
		removed = true
	}
	if removed {
		l.log.Warn("the configured agent key replaces the generated one: the generated key is revoked and its key file removed; without --agent-key the next start generates a new key",
			"key_file", l.key.file)
	}
	return nil
}

// isGeneratedKey reports whether s has the shape of a generated key: the
// prefix and 43 characters of unpadded base64url.
func isGeneratedKey(s string) bool {
	if len(s) != generatedKeyLen || !strings.HasPrefix(s, agentKeyPrefix) {
		return false
	}
	for _, c := range s[len(agentKeyPrefix):] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// migratePlainAgentKey replaces a plain key an earlier version stored by
// its hash, writing it to the key file when there is none, and returns the
// stored hash ("" when there is none).
func (l *keyLoader) migratePlainAgentKey(ctx context.Context) (string, error) {
	hash, _, err := l.st.Setting(ctx, agentKeyHashSetting)
	if err != nil {
		return "", fmt.Errorf("read the agent key's hash: %w", err)
	}
	plain, ok, err := l.st.Setting(ctx, agentKeySetting)
	if err != nil || !ok {
		return hash, err
	}
	if hash == "" {
		hash = hashToken(plain)
	}
	if hash == hashToken(plain) && l.key.file != "" {
		if _, err := os.Stat(l.key.file); errors.Is(err, fs.ErrNotExist) {
			if err := writeAgentKeyFile(l.key.file, plain, false); err != nil {
				return "", err
			}
		}
	}
	err = l.st.Write(ctx, func(tx *store.Tx) error {
		if err := tx.PutSetting(agentKeyHashSetting, hash); err != nil {
			return err
		}
		return tx.DeleteSetting(agentKeySetting)
	})
	if err != nil {
		return "", fmt.Errorf("replace the stored agent key by its hash: %w", err)
	}
	l.log.Info("the agent key stored in the database was replaced by its hash; the key is in the key file", "key_file", l.key.file)
	return hash, nil
}

func (l *keyLoader) setAgentKey(key string) {
	l.key.plain = key
	l.key.hash = sha256.Sum256([]byte(key))
}

// readAgentKeyFile returns the key in the key file ("" when there is
// none, or the file is empty) and whether the file exists. A key file
// others may read is logged.
func (l *keyLoader) readAgentKeyFile() (key string, found bool, err error) {
	if l.key.file == "" {
		return "", false, nil
	}
	b, err := os.ReadFile(l.key.file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	} else if err != nil {
		return "", false, fmt.Errorf("read the agent key file: %w", err)
	}
	if info, err := os.Stat(l.key.file); err == nil && info.Mode().Perm()&0o077 != 0 {
		l.log.Warn("the agent key file can be read by other users; chmod 600 it", "key_file", l.key.file, "mode", info.Mode().Perm().String())
	}
	return strings.TrimSpace(string(b)), true, nil
}

// keyFileTempSuffix marks the temporary file a key file is written to
// before it is put in place.
const keyFileTempSuffix = ".tmp-"

// writeAgentKeyFile writes a key file, 0600 whatever the umask, so that it
// appears whole or not at all: the key goes to a temporary file in the
// same directory, which is synced, then linked into place (never over an
// existing file) or, with replace, renamed over the file there (one found
// empty or malformed); the directory is synced after. With no file (a
// database in memory) it does nothing: the key is printed at start and
// lives as long as the process.
func writeAgentKeyFile(path, key string, replace bool) error {
	if path == "" {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+keyFileTempSuffix+"*")
	if err != nil {
		return fmt.Errorf("write the agent key file: %w", err)
	}
	defer os.Remove(tmp.Name()) // once linked or renamed, a name that is gone or no longer needed
	_, err = tmp.WriteString(key + "\n")
	if err = errors.Join(err, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("write the agent key file %s: %w", path, err)
	}
	if replace {
		err = os.Rename(tmp.Name(), path)
	} else if err = os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		// A file system without hard links: rename, when nothing is there.
		if _, statErr := os.Lstat(path); errors.Is(statErr, fs.ErrNotExist) {
			err = os.Rename(tmp.Name(), path)
		}
	}
	if err != nil {
		return fmt.Errorf("put the agent key file %s in place: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// removeStaleKeyFiles removes the temporary key files a start that stopped
// while writing the key file left beside it.
func removeStaleKeyFiles(path string) {
	if path == "" {
		return
	}
	dir, prefix := filepath.Dir(path), filepath.Base(path)+keyFileTempSuffix
	entries, _ := os.ReadDir(dir)
	for _, entry := range entries {
		if strings.HasPrefix(entry.Name(), prefix) {
			os.Remove(filepath.Join(dir, entry.Name()))
		}
	}
}

// syncDir makes a file created, renamed or removed in dir durable. Where a
// directory cannot be synced (Windows) it does nothing.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
