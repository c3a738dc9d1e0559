package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate"
)

// schemaCache shares compiled argument schemas among the tools whose
// parameters are the same bytes (registration stores them compacted). The
// clients of one app register the same tools, and each compiled schema
// costs a compile and some heap to keep (the figures are in BENCHMARKS.md,
// "Figures behind design choices in the code"): shared, a gateway holding
// thousands of such sessions compiles a schema once — at start-up, where
// a loaded tool is first called, too — and keeps it once.
//
// The cache holds its schemas weakly: once no tool uses a schema it is
// collected and its entry removed, so what clients register never grows
// the cache beyond the schemas their tools hold anyway (the map itself
// keeps the size it reached, a key and a weak pointer an entry). A client
// can tell from how fast a registration is whether a tool of another
// session has the very same parameters; the parameters themselves are not
// told.
//
// It is also the compile budget. A schema is compiled only once it passed
// toolgate.CheckToolParameters' limits (size, depth, objects and arrays,
// the cost of validating args, the length of its patterns), which with
// compileSchema's bounds on regular expressions bound one compile to
// milliseconds and a megabyte or two (BENCHMARKS.md, "Tool schemas:
// the limits and their worst case"); and only a few compiles run at once,
// one per slot, so registrations arriving together queue for the slots
// instead of taking every core from the calls. A compile cannot be
// stopped midway, but the wait for a slot ends with the request's context.
type schemaCache struct {
	mu      sync.Mutex
	schemas map[[sha256.Size]byte]weak.Pointer[jsonschema.Schema]

	slots    chan struct{} // one token per compile running
	compiles atomic.Int64  // schemas compiled so far (tests read it)
}

// newSchemaCache returns an empty cache with compileSlots slots.
func newSchemaCache() *schemaCache {
	return &schemaCache{
		schemas: map[[sha256.Size]byte]weak.Pointer[jsonschema.Schema]{},
		slots:   make(chan struct{}, compileSlots()),
	}
}

// compileSlots is the number of schema compiles the gateway runs at once:
// half its processors, at least one, so that compiles never hold every
// core the calls need.
func compileSlots() int {
	return max(1, runtime.GOMAXPROCS(0)/2)
}

// compile returns the compiled schema of raw, shared with every tool whose
// parameters are the same bytes. Parameters over the limits are refused
// before anything is compiled; a schema that does not compile is not kept:
// each attempt gets its error. The compile waits for a slot, or until ctx
// ends (its error is then returned).
func (c *schemaCache) compile(ctx context.Context, raw json.RawMessage) (*jsonschema.Schema, error) {
	key := sha256.Sum256(raw)
	if sch := c.lookup(key); sch != nil {
		return sch, nil
	}
	if err := toolgate.CheckToolParameters(raw); err != nil {
		return nil, errors.New(toolgate.ErrorMessage(err))
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.slots }()
	// Compiled outside the lock, so a lookup never waits for a compile:
	// two registrations of one new schema at once may both compile it
	// (unless the second found it done once it had its slot), and the
	// second takes the first's.
	if sch := c.lookup(key); sch != nil {
		return sch, nil
	}
	c.compiles.Add(1)
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
