package sandbox

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// TestShapeModule: a table with no maximum is given its minimum as one,
// even when the section's size is written with padding, and the module
// still compiles; its tables are counted at their maximum; a truncated
// section is refused.
func TestShapeModule(t *testing.T) {
	header := []byte("\x00asm\x01\x00\x00\x00")
	// Table section, size padded to 5 bytes: funcref, min 3, no maximum.
	tables := []byte{4, 0x84, 0x80, 0x80, 0x80, 0x00, 1, 0x70, 0x00, 3}
	memory := []byte{5, 3, 1, 0x00, 1}
	module := append(append(append([]byte{}, header...), tables...), memory...)
	shape, err := shapeModule(module)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, header...), 4, 5, 1, 0x70, 0x01, 3, 3), memory...)
	if !bytes.Equal(shape.wasm, want) {
		t.Fatalf("shaped % x; want % x", shape.wasm, want)
	}
	if shape.instanceBytes != instanceFixedBytes+tableBytes+3*tableEntryBytes {
		t.Fatalf("instance bytes %d", shape.instanceBytes)
	}
	r := wazero.NewRuntime(context.Background())
	defer r.Close(context.Background())
	if _, err := r.CompileModule(context.Background(), shape.wasm); err != nil {
		t.Fatalf("the shaped module does not compile: %v", err)
	}

	if _, err := shapeModule(append(append([]byte{}, header...), 4, 9, 1, 0x70)); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("a truncated section: %v", err)
	}
	if _, err := shapeModule(append(append([]byte{}, header...), 4, 4, 1, 0x70, 0x03, 0)); err == nil || !strings.Contains(err.Error(), "limits flag") {
		t.Fatalf("a shared table: %v", err)
	}
}

// TestShapeModuleCountsBounded: a module declaring more functions, data
// segments or element segments than a sandboxed tool may have is refused
// before it is compiled (what wazero keeps of a compiled module grows
// with them, whatever its memory limit); as many as the bound is read on.
func TestShapeModuleCountsBounded(t *testing.T) {
	header := []byte("\x00asm\x01\x00\x00\x00")
	section := func(id byte, count uint64) []byte {
		var n []byte
		for {
			b := byte(count & 0x7f)
			count >>= 7
			if count == 0 {
				n = append(n, b)
				break
			}
			n = append(n, b|0x80)
		}
		return append(append(append([]byte{}, header...), id, byte(len(n))), n...)
	}
	for _, tc := range []struct {
		id    byte
		limit uint64
		what  string
	}{
		{sectionFunction, MaxModuleFunctions, "functions"},
		{sectionData, MaxModuleDataSegments, "data segments"},
		{sectionElement, MaxModuleElementSegments, "element segments"},
	} {
		if _, err := shapeModule(section(tc.id, tc.limit)); err != nil {
			t.Errorf("%d %s: %v", tc.limit, tc.what, err)
		}
		_, err := shapeModule(section(tc.id, tc.limit+1))
		if err == nil || !strings.Contains(err.Error(), "declares") || !strings.Contains(err.Error(), tc.what) {
			t.Errorf("%d %s: %v", tc.limit+1, tc.what, err)
		}
	}
}
