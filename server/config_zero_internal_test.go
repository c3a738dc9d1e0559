package server

import "testing"

// A program that embeds the gateway fills in only what it needs (the
// benchmark harness gives an address, a database and a key): every field
// left at zero takes its default, and the result is valid. A new option
// whose zero value is out of its range must get its default in
// withDefaults, or this fails.
func TestZeroFieldsTakeTheirDefaults(t *testing.T) {
	if err := (Config{DBPath: "x.db"}).Validate(); err != nil {
		t.Fatalf("a Config with zero fields does not validate: %v", err)
	}
}
