package mobile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// SessionState is what a client needs to resume its session after a
// restart: the gateway it belongs to, the session id, its token, and the
// last event cursor seen.
type SessionState struct {
	GatewayURL string `json:"gateway_url"`
	SessionID  string `json:"session_id"`
	Token      string `json:"token"`
	Cursor     int64  `json:"cursor"`
}

// SessionStore keeps a client's SessionState across restarts. Load returns
// nil (and no error) when nothing is stored. Apps may implement it over
// their own storage (Android's EncryptedSharedPreferences, the iOS
// keychain); FileSessionStore keeps it in a file.
type SessionStore interface {
	Load() (*SessionState, error)
	Save(state *SessionState) error
	Clear() error
}

// FileSessionStore keeps the session state as JSON in one file, written
// atomically (a temporary file renamed over it) and readable only by its
// owner, because it holds the session token.
type FileSessionStore struct {
	path string
	mu   sync.Mutex
}

// NewFileSessionStore returns a store that keeps its state in path. The
// folder is created when the state is first saved.
func NewFileSessionStore(path string) *FileSessionStore {
	return &FileSessionStore{path: path}
}

// Path returns the file the state lives in.
func (s *FileSessionStore) Path() string { return s.path }

// Load reads the stored state; a missing file is no state.
func (s *FileSessionStore) Load() (*SessionState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var state SessionState
	if err := json.Unmarshal(b, &state); err != nil {
		return nil, fmt.Errorf("session state %s: %w", s.path, err)
	}
	if state.SessionID == "" || state.Token == "" {
		return nil, nil
	}
	return &state, nil
}

// Save writes the state.
func (s *FileSessionStore) Save(state *SessionState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), "."+filepath.Base(s.path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path)
}

// Clear removes the stored state.
func (s *FileSessionStore) Clear() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// MemorySessionStore keeps the state in memory only: a session lasts as
// long as the process. It is the default store of a Client.
type MemorySessionStore struct {
	mu    sync.Mutex
	state *SessionState
}

// NewMemorySessionStore returns an empty in-memory store.
func NewMemorySessionStore() *MemorySessionStore { return &MemorySessionStore{} }

// Load returns a copy of the kept state, or nil.
func (s *MemorySessionStore) Load() (*SessionState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return nil, nil
	}
	copied := *s.state
	return &copied, nil
}

// Save keeps a copy of state.
func (s *MemorySessionStore) Save(state *SessionState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	copied := *state
	s.state = &copied
	return nil
}

// Clear forgets the state.
func (s *MemorySessionStore) Clear() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = nil
	return nil
}
