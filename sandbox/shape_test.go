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
