package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/toolgate/toolgate/store"
)

// The agent key at rest. The database holds only its SHA-256 (a 256-bit
// random key needs no slower hash), under agentKeyHashSetting; a generated
// key is written once, readable by its owner alone, to the key file beside
// the database (AgentKeyFile), where later starts read it to print the
// console link. A key given in the configuration is used as it is and
// stored nowhere. Databases of earlier versions held the key itself under
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

// agentKey is the caller/admin secret as the engine knows it: always its
// hash, and the key itself when it was configured or read from the key
// file. It is set once, before serving, and only read after.
type agentKey struct {
	plain string   // "" when only the hash is known
	hash  [32]byte // SHA-256 of the key
	file  string   // the key file, "" for a database in memory
}

// matches reports, in constant time, whether secret is the key.
func (k *agentKey) matches(secret string) bool {
	sum := sha256.Sum256([]byte(secret))
	return secret != "" && subtle.ConstantTimeCompare(sum[:], k.hash[:]) == 1
}

// foundIn reports whether s holds the key anywhere: the key itself when it
// is known, else any generated-looking key ("tga_" and 43 characters) in s
// whose hash is the key's.
func (k *agentKey) foundIn(s string) bool {
	if k.plain != "" {
		return strings.Contains(s, k.plain)
	}
	for rest := s; ; {
		i := strings.Index(rest, agentKeyPrefix)
		if i < 0 {
			return false
		}
		if len(rest)-i >= generatedKeyLen && k.matches(rest[i:i+generatedKeyLen]) {
			return true
		}
		rest = rest[i+len(agentKeyPrefix):]
	}
}

// AgentKeyFile is the key file of the database at dbPath: where a
// generated agent key is written, readable by its owner alone; "" for a
// database in memory, whose key is only printed.
func AgentKeyFile(dbPath string) string {
	if dbPath == "" || dbPath == ":memory:" {
		return ""
	}
	return dbPath + ".agent-key"
}

// AgentKey returns the caller/admin secret when the gateway knows it (it
// was configured, or read from the key file); "" when only its hash is
// stored, the key file having gone.
func (e *Engine) AgentKey() string { return e.agentKey.plain }

// AgentKeyFile returns the file a generated agent key is kept in ("" for
// a database in memory).
func (e *Engine) AgentKeyFile() string { return e.agentKey.file }

// IsAgentKey reports whether secret is the agent key, comparing hashes in
// constant time.
func (e *Engine) IsAgentKey(secret string) bool { return e.agentKey.matches(secret) }

// holdsAgentKey reports whether s holds the agent key anywhere (client
// metadata is scrubbed of it).
func (e *Engine) holdsAgentKey(s string) bool { return e.agentKey.foundIn(s) }

// loadAgentKey moves an earlier version's plain key out of the database,
// then takes the configured key, or the stored hash (and the key from the
// key file when it matches), or generates a key at first start: written to
// the key file first, its hash stored after, so that a crash in between
// leaves a key file the next start adopts.
func (e *Engine) loadAgentKey(ctx context.Context) error {
	e.agentKey.file = AgentKeyFile(e.cfg.DBPath)
	stored, err := e.migratePlainAgentKey(ctx)
	if err != nil {
		return err
	}
	if e.cfg.AgentKey != "" {
		e.setAgentKey(e.cfg.AgentKey)
		return nil
	}
	fromFile, err := e.readAgentKeyFile()
	if err != nil {
		return err
	}
	if stored != "" {
		if err := e.setAgentKeyHash(stored); err != nil {
			return err
		}
		if fromFile != "" && e.agentKey.matches(fromFile) {
			e.agentKey.plain = fromFile
		} else {
			e.log.Warn("the agent key is stored only as a hash and its key file is missing or holds another key: it cannot be printed; pass --agent-key to use a key of your choice",
				"key_file", e.agentKey.file)
		}
		return nil
	}
	key := fromFile
	if key == "" {
		key = agentKeyPrefix + newSecret()
		if err := writeAgentKeyFile(e.agentKey.file, key); err != nil {
			return err
		}
	}
	e.setAgentKey(key)
	if err := e.st.Write(ctx, func(tx *store.Tx) error { return tx.PutSetting(agentKeyHashSetting, hashToken(key)) }); err != nil {
		return fmt.Errorf("store the agent key's hash: %w", err)
	}
	return nil
}

// migratePlainAgentKey replaces a plain key an earlier version stored by
// its hash, writing it to the key file when there is none, and returns the
// stored hash ("" when there is none).
func (e *Engine) migratePlainAgentKey(ctx context.Context) (string, error) {
	hash, _, err := e.st.Setting(ctx, agentKeyHashSetting)
	if err != nil {
		return "", fmt.Errorf("read the agent key's hash: %w", err)
	}
	plain, ok, err := e.st.Setting(ctx, agentKeySetting)
	if err != nil || !ok {
		return hash, err
	}
	if hash == "" {
		hash = hashToken(plain)
	}
	if hash == hashToken(plain) && e.agentKey.file != "" {
		if _, err := os.Stat(e.agentKey.file); errors.Is(err, fs.ErrNotExist) {
			if err := writeAgentKeyFile(e.agentKey.file, plain); err != nil {
				return "", err
			}
		}
	}
	err = e.st.Write(ctx, func(tx *store.Tx) error {
		if err := tx.PutSetting(agentKeyHashSetting, hash); err != nil {
			return err
		}
		return tx.DeleteSetting(agentKeySetting)
	})
	if err != nil {
		return "", fmt.Errorf("replace the stored agent key by its hash: %w", err)
	}
	e.log.Info("the agent key stored in the database was replaced by its hash; the key is in the key file", "key_file", e.agentKey.file)
	return hash, nil
}

func (e *Engine) setAgentKey(key string) {
	e.agentKey.plain = key
	e.agentKey.hash = sha256.Sum256([]byte(key))
}

func (e *Engine) setAgentKeyHash(stored string) error {
	b, err := hex.DecodeString(stored)
	if err != nil || len(b) != len(e.agentKey.hash) {
		return fmt.Errorf("the stored agent key hash (setting %s) is not a SHA-256 in hex", agentKeyHashSetting)
	}
	copy(e.agentKey.hash[:], b)
	return nil
}

// readAgentKeyFile returns the key in the key file, "" when there is none.
// A key file others may read is logged.
func (e *Engine) readAgentKeyFile() (string, error) {
	if e.agentKey.file == "" {
		return "", nil
	}
	b, err := os.ReadFile(e.agentKey.file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("read the agent key file: %w", err)
	}
	if info, err := os.Stat(e.agentKey.file); err == nil && info.Mode().Perm()&0o077 != 0 {
		e.log.Warn("the agent key file can be read by other users; chmod 600 it", "key_file", e.agentKey.file, "mode", info.Mode().Perm().String())
	}
	return strings.TrimSpace(string(b)), nil
}

// writeAgentKeyFile writes a new key file, 0600 whatever the umask; it
// never overwrites one. With no file (a database in memory) it does
// nothing: the key is printed at start and lives as long as the process.
func writeAgentKeyFile(path, key string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write the agent key file: %w", err)
	}
	_, err = f.WriteString(key + "\n")
	if err = errors.Join(err, f.Chmod(0o600), f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return fmt.Errorf("write the agent key file %s: %w", path, err)
	}
	return nil
}
