package server

import (
	"crypto/sha256"
	"encoding/json"
	"runtime"
	"sync"
	"weak"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaCache shares compiled argument schemas among the tools whose
// parameters are the same bytes (registration stores them compacted). The
// clients of one app register the same tools, and each compiled schema
// costs a compile and some heap to keep (the figures are in BENCHMARKS.md,
// "Figures behind design choices in the code"): shared, a gateway holding
// thousands of such sessions compiles a schema once — at start-up, where
// it loads every session's tools, too — and keeps it once.
//
// The cache holds its schemas weakly: once no tool uses a schema it is
// collected and its entry removed, so what clients register never grows
// the cache beyond the schemas their tools hold anyway (the map itself
// keeps the size it reached, a key and a weak pointer an entry). A client
// can tell from how fast a registration is whether a tool of another
// session has the very same parameters; the parameters themselves are not
// told.
type schemaCache struct {
	mu      sync.Mutex
	schemas map[[sha256.Size]byte]weak.Pointer[jsonschema.Schema]
}

func newSchemaCache() *schemaCache {
	return &schemaCache{schemas: map[[sha256.Size]byte]weak.Pointer[jsonschema.Schema]{}}
}

// compile returns the compiled schema of raw, shared with every tool whose
// parameters are the same bytes. A schema that does not compile is not
// kept: each attempt gets its error.
func (c *schemaCache) compile(raw json.RawMessage) (*jsonschema.Schema, error) {
	key := sha256.Sum256(raw)
	if sch := c.lookup(key); sch != nil {
		return sch, nil
	}
	// Compiled outside the lock: two registrations of one new schema at
	// once may both compile it, and the second takes the first's.
	sch, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if shared := c.schemas[key].Value(); shared != nil {
		return shared, nil
	}
	ptr := weak.Make(sch)
	c.schemas[key] = ptr
	runtime.AddCleanup(sch, c.forget, cacheEntry{key, ptr})
	return sch, nil
}

// lookup returns the live schema stored under key, or nil.
func (c *schemaCache) lookup(key [sha256.Size]byte) *jsonschema.Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.schemas[key].Value()
}

// cacheEntry names an entry of the cache: its key and the weak pointer it
// held when its schema was stored.
type cacheEntry struct {
	key [sha256.Size]byte
	ptr weak.Pointer[jsonschema.Schema]
}

// forget removes an entry whose schema was collected, unless the key has
// since been given a new schema.
func (c *schemaCache) forget(e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.schemas[e.key] == e.ptr {
		delete(c.schemas, e.key)
	}
}
