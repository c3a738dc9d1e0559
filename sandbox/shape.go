package sandbox

import (
	"errors"
	"fmt"
)

// What one instance of a module holds on the gateway's heap besides its
// linear memory, per item its module declares (wazero v1.12: the
// instance's structures and the engine's per-instance context, rounded
// up). A table's entries are 8 bytes each (wazero grows a table with
// append, on the Go heap), so a table is what a module could otherwise
// make the gateway allocate without bound (table.grow, up to 2^32
// entries); the rest grows with the module's size (MaxModuleBytes).
const (
	tableEntryBytes    = 8
	tableBytes         = 128 // a table's own structures
	globalBytes        = 80
	typeBytes          = 16
	importBytes        = 48
	elementByteBytes   = 8 // a passive element segment copied per instance: at most one entry per byte of the section
	elementBytes       = 64
	dataSegmentBytes   = 32
	tagBytes           = 64
	instanceFixedBytes = 64 << 10 // the instance itself, its stack, its WASI state
)

// Sections of a WebAssembly module this file reads.
const (
	sectionType     = 1
	sectionImport   = 2
	sectionFunction = 3
	sectionTable    = 4
	sectionGlobal   = 6
	sectionElement  = 9
	sectionData     = 11
	sectionTag      = 13
)

// The most functions, data segments and element segments a sandboxed
// module may declare. What wazero keeps of a compiled module while its
// tool is listed grows with them, not with its memory limit (about 250
// bytes a function and 50 a data segment, and the compile's time with the
// functions: 2,000,000 empty functions took 11 s and kept 500 MB), so a
// module hostile by its shape alone could hold gigabytes per tool. Real
// modules are far inside: a Go module has tens of thousands of functions
// and data segments.
const (
	MaxModuleFunctions       = 200_000
	MaxModuleDataSegments    = 500_000
	MaxModuleElementSegments = 100_000
)

// moduleShape is what loading a module learned of it beyond what wazero
// tells: its bytes as compiled (its tables given a maximum) and what one
// instance of it holds on the gateway's heap besides its linear memory.
type moduleShape struct {
	wasm          []byte
	instanceBytes uint64
}

// shapeModule reads a module's sections: it gives every table with no
// maximum one (its minimum), so that table.grow cannot make the gateway
// allocate without bound, and adds up what an instance holds (tables at
// their maximum). A module it cannot read is refused ("does not
// compile"), as wazero would.
func shapeModule(wasm []byte) (moduleShape, error) {
	r := &wasmReader{b: wasm}
	switch {
	case len(wasm) >= 4 && string(wasm[:4]) != "\x00asm":
		return moduleShape{}, errors.New("not a WebAssembly module (no \\0asm header)")
	case len(wasm) < 8:
		return moduleShape{}, errors.New("truncated: too short for a WebAssembly module's header")
	}
	r.pos = 8
	shape := moduleShape{wasm: wasm, instanceBytes: instanceFixedBytes}
	for r.pos < len(r.b) {
		header := r.pos
		id := r.byte()
		size := r.u32()
		start := r.pos
		end := start + int(size)
		if r.err != nil || end > len(r.b) || end < start {
			return moduleShape{}, fmt.Errorf("section %d: malformed or truncated", id)
		}
		body := &wasmReader{b: r.b[:end], pos: start}
		switch id {
		case sectionTable:
			tables, bytes, err := readTables(body)
			if err != nil {
				return moduleShape{}, err
			}
			shape.instanceBytes += bytes
			if tables != nil { // rewritten: tables without a maximum now have one
				rebuilt := append([]byte{}, r.b[:header]...)
				rebuilt = append(rebuilt, sectionTable)
				rebuilt = appendULEB(rebuilt, uint64(len(tables)))
				rebuilt = append(rebuilt, tables...)
				next := len(rebuilt)
				shape.wasm = append(rebuilt, r.b[end:]...)
				r = &wasmReader{b: shape.wasm, pos: next}
				continue
			}
		case sectionType:
			shape.instanceBytes += uint64(body.u32()) * typeBytes
		case sectionImport:
			shape.instanceBytes += uint64(body.u32()) * importBytes
		case sectionGlobal:
			shape.instanceBytes += uint64(body.u32()) * globalBytes
		case sectionFunction:
			if n := body.u32(); n > MaxModuleFunctions {
				return moduleShape{}, fmt.Errorf("declares %d functions; a sandboxed tool may have at most %d", n, MaxModuleFunctions)
			}
		case sectionElement:
			n := body.u32()
			if n > MaxModuleElementSegments {
				return moduleShape{}, fmt.Errorf("declares %d element segments; a sandboxed tool may have at most %d", n, MaxModuleElementSegments)
			}
			shape.instanceBytes += uint64(n)*elementBytes + uint64(size)*elementByteBytes
		case sectionData:
			n := body.u32()
			if n > MaxModuleDataSegments {
				return moduleShape{}, fmt.Errorf("declares %d data segments; a sandboxed tool may have at most %d", n, MaxModuleDataSegments)
			}
			shape.instanceBytes += uint64(n) * dataSegmentBytes
		case sectionTag:
			shape.instanceBytes += uint64(body.u32()) * tagBytes
		}
		if body.err != nil {
			return moduleShape{}, fmt.Errorf("section %d: %w", id, body.err)
		}
		r.pos = end
	}
	return shape, nil
}

// readTables reads a table section: what its tables hold at their
// maximum, and the section's body again with a maximum (the minimum)
// given to every table that has none, or nil when all had one. Table
// types other than a plain funcref or externref (the typed references of
// later proposals, tables with an initializer) are refused.
func readTables(r *wasmReader) (rewritten []byte, bytes uint64, err error) {
	count := r.u32()
	out := appendULEB(nil, uint64(count))
	changed := false
	for i := uint32(0); i < count && r.err == nil; i++ {
		refType := r.byte()
		if refType != 0x70 && refType != 0x6f {
			return nil, 0, fmt.Errorf("table %d has a type (%#x) a sandboxed tool may not use (funcref or externref only)", i, refType)
		}
		flag := r.byte()
		min := r.u32()
		max := min
		switch flag {
		case 0x00:
			changed = true
		case 0x01:
			max = r.u32()
		default:
			return nil, 0, fmt.Errorf("table %d: limits flag %#x (shared or 64-bit tables are not for a sandboxed tool)", i, flag)
		}
		out = append(out, refType, 0x01)
		out = appendULEB(out, uint64(min))
		out = appendULEB(out, uint64(max))
		bytes += tableBytes + uint64(max)*tableEntryBytes
	}
	if r.err != nil {
		return nil, 0, fmt.Errorf("section %d: %w", sectionTable, r.err)
	}
	if r.pos != len(r.b) {
		return nil, 0, fmt.Errorf("section %d: %d bytes after its tables", sectionTable, len(r.b)-r.pos)
	}
	if !changed {
		return nil, bytes, nil
	}
	return out, bytes, nil
}

// wasmReader reads a module's bytes; its first error sticks.
type wasmReader struct {
	b   []byte
	pos int
	err error
}

var errTruncated = errors.New("truncated")

func (r *wasmReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.err = errTruncated
		return 0
	}
	b := r.b[r.pos]
	r.pos++
	return b
}

// u32 reads an unsigned LEB128 number of at most 32 bits.
func (r *wasmReader) u32() uint32 {
	var n uint64
	for shift := 0; shift < 35; shift += 7 {
		b := r.byte()
		if r.err != nil {
			return 0
		}
		n |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			if n > 1<<32-1 {
				r.err = errors.New("a number over 32 bits")
				return 0
			}
			return uint32(n)
		}
	}
	r.err = errors.New("a number over 5 bytes")
	return 0
}

// appendULEB appends n as an unsigned LEB128 number.
func appendULEB(b []byte, n uint64) []byte {
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
