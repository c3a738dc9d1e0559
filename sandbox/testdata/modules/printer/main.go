// Command printer is a sandboxed tool that prints without end: 64 KiB
// blocks on its standard output, or with {"stderr": true} on its
// standard error.
package main

import (
	"encoding/json"
	"os"
	"strings"
)

func main() {
	var args struct {
		Stderr bool `json:"stderr"`
	}
	json.NewDecoder(os.Stdin).Decode(&args)
	out := os.Stdout
	if args.Stderr {
		out = os.Stderr
	}
	block := []byte(strings.Repeat("x", 64<<10))
	for {
		out.Write(block)
	}
}
