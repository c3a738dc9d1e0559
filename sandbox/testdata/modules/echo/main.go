// Command echo is a sandboxed tool that answers: it reads its arguments
// ({"text": "..."}) and answers them upper-cased, with what it can see of
// its host (arguments, environment). {"raw": "..."} prints raw instead of
// JSON; {"big": N} prints a JSON string of N bytes.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

func main() {
	var args struct {
		Text string `json:"text"`
		Raw  string `json:"raw"`
		Big  int    `json:"big"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&args); err != nil {
		fmt.Fprintln(os.Stderr, "bad arguments:", err)
		os.Exit(1)
	}
	switch {
	case args.Raw != "":
		fmt.Print(args.Raw)
	case args.Big > 0:
		fmt.Printf("%q", strings.Repeat("x", args.Big))
	default:
		json.NewEncoder(os.Stdout).Encode(map[string]any{
			"upper": strings.ToUpper(args.Text),
			"argv":  os.Args,
			"env":   os.Environ(),
		})
	}
}
