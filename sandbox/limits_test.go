package sandbox_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox"
)

// wasmModule assembles a module written by hand from its sections (each
// an id and a body), after the header.
func wasmModule(sections ...[]byte) string {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s...)
	}
	return string(out)
}

// wasmSection is a section: its id, its body's length and its body.
func wasmSection(id byte, body ...byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
}

// uleb is n as an unsigned LEB128 number.
func uleb(n uint64) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// commandWith is a WASI command of one page of memory whose _start is
// body (its locals and code, without the size), with the tables (each a
// table type: reference type and limits) and globals (each a global
// type and its constant expression) given.
func commandWith(tables, globals [][]byte, body []byte) string {
	var sections [][]byte
	sections = append(sections, wasmSection(1, 1, 0x60, 0, 0)) // type 0: () -> ()
	sections = append(sections, wasmSection(3, 1, 0))          // one function of type 0
	if len(tables) > 0 {
		sections = append(sections, wasmSection(4, vector(tables)...))
	}
	sections = append(sections, wasmSection(5, 1, 0x00, 1)) // memory: min 1 page
	if len(globals) > 0 {
		sections = append(sections, wasmSection(6, vector(globals)...))
	}
	sections = append(sections, wasmSection(7, 2, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0))
	code := append(uleb(uint64(len(body))), body...)
	sections = append(sections, wasmSection(10, append([]byte{1}, code...)...))
	return wasmModule(sections...)
}

// vector is items preceded by their count.
func vector(items [][]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// growTable is a _start body that grows table 0 by 2^21 entries (16 MiB
// of the gateway's memory in wazero) and executes unreachable when the
// growth is refused, as a program that cannot allocate dies.
var growTable = []byte{0, // no locals
	0xd0, 0x70, // ref.null func
	0x41, 0x80, 0x80, 0x80, 0x01, // i32.const 2097152
	0xfc, 0x0f, 0x00, // table.grow 0
	0x41, 0x7f, // i32.const -1
	0x46,       // i32.eq
	0x04, 0x40, // if
	0x00, // unreachable
	0x0b, // end
	0x0b} // end

// TestTablesCountAgainstTheMemoryLimit: a module's tables live on the
// gateway's heap, so they are held to memory_limit_mb too. A table with
// no maximum cannot grow (table.grow fails, here ending the module); a
// table, or globals, whose size does not fit the limit is refused when
// the module is loaded, saying so.
func TestTablesCountAgainstTheMemoryLimit(t *testing.T) {
	funcref := func(limits ...byte) []byte { return append([]byte{0x70}, limits...) }
	global := []byte{0x7f, 0x00, 0x41, 0x00, 0x0b} // i32 const 0
	manyGlobals := make([][]byte, 300_000)         // ~1.5 MB of module, more than 16 MiB in wazero
	for i := range manyGlobals {
		manyGlobals[i] = global
	}
	modules := map[string]string{
		"grow":     commandWith([][]byte{funcref(0x00, 0)}, nil, growTable),                                     // min 0, no maximum
		"huge_max": commandWith([][]byte{funcref(0x01, 0, 0xff, 0xff, 0xff, 0xff, 0x0f)}, nil, []byte{0, 0x0b}), // min 0, max 2^32-1
		"huge_min": commandWith([][]byte{funcref(append([]byte{0x00}, uleb(1<<20)...)...)}, nil, []byte{0, 0x0b}),
		"many_tables": commandWith(func() [][]byte {
			ts := make([][]byte, 200)
			for i := range ts {
				ts[i] = funcref(append([]byte{0x00}, uleb(1<<13)...)...)
			}
			return ts
		}(), nil, []byte{0, 0x0b}),
		"globals": commandWith(nil, manyGlobals, []byte{0, 0x0b}),
	}
	set := openSet(t, nil, func(dir string) {
		for name, wasm := range modules {
			writeFile(t, filepath.Join(dir, name+".wasm"), wasm)
			limit := "1"
			if name == "globals" {
				limit = "16"
			}
			writeFile(t, filepath.Join(dir, name+".json"), `{"description": "x", "memory_limit_mb": `+limit+`}`)
		}
	})
	if got := strings.Join(set.names(), " "); got != "grow" {
		t.Fatalf("listed %q; want only grow; the log says:\n%s", got, set.log.String())
	}
	for _, name := range []string{"huge_max", "huge_min", "many_tables", "globals"} {
		if !strings.Contains(set.log.String(), name+".wasm needs") {
			t.Errorf("the log does not say why %s is left out:\n%s", name, set.log.String())
		}
	}
	_, err := set.call(t, "grow", `{}`, 10*time.Second)
	te := toolError(t, err, sandbox.CodeToolError)
	if !strings.Contains(te.Message, "crashed: wasm error: unreachable") {
		t.Fatalf("a module growing its table: %q; want its growth refused", te.Message)
	}
}
