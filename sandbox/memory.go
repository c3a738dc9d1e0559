package sandbox

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// wasmPageBytes is the size of a WebAssembly memory page.
const wasmPageBytes = 65536

// callMemory backs the linear memory of one call's module instance and
// holds it to the tool's limit: every growth past it is refused here (the
// runtime's own cap is MaxMemoryLimitMB), so the module sees memory.grow
// fail (a Go module then dies with "out of memory", a Rust one aborts)
// and the call's error can say for sure that the limit was reached.
type callMemory struct {
	limit   uint64
	refused atomic.Bool // a growth past limit was refused
}

// Allocate implements experimental.MemoryAllocator.
func (m *callMemory) Allocate(capacity, max uint64) experimental.LinearMemory {
	return &linearMemory{owner: m, max: max}
}

// linearMemory is one memory of the instance: a byte slice grown by
// copying, as wazero's own is when no allocator is given.
type linearMemory struct {
	owner *callMemory
	max   uint64
	buf   []byte
	begun bool
}

// Reallocate implements experimental.LinearMemory. The first call (the
// memory's minimum, which checkCommand held to the limit) is always
// granted, since wazero cannot take a refusal then.
func (l *linearMemory) Reallocate(size uint64) []byte {
	if l.begun && size > l.owner.limit {
		l.owner.refused.Store(true)
		return nil
	}
	l.begun = true
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
		return l.buf
	}
	// Double, as append would, within the limit and the memory's maximum.
	capacity := max(size, min(2*uint64(cap(l.buf)), l.owner.limit, l.max))
	grown := make([]byte, size, capacity)
	copy(grown, l.buf)
	l.buf = grown
	return l.buf
}

// Free implements experimental.LinearMemory.
func (l *linearMemory) Free() { l.buf = nil }
