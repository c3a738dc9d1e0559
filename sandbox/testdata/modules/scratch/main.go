// Command scratch is a sandboxed tool that uses its scratch directory: it
// writes {"text"} to a file, reads it back and answers it with the
// directory's entries before it wrote. {"fill_mb": N} writes N MiB.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var args struct {
		Text   string `json:"text"`
		FillMB int    `json:"fill_mb"`
	}
	json.NewDecoder(os.Stdin).Decode(&args)
	before, err := os.ReadDir("/")
	if err != nil {
		fmt.Fprintln(os.Stderr, "read /:", err)
		os.Exit(1)
	}
	names := []string{}
	for _, e := range before {
		names = append(names, e.Name())
	}
	if args.FillMB > 0 {
		f, err := os.Create("fill")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		chunk := make([]byte, 1<<20)
		for i := 0; i < args.FillMB; i++ {
			if _, err := f.Write(chunk); err != nil {
				fmt.Fprintln(os.Stderr, "write:", err)
				os.Exit(1)
			}
		}
	}
	if err := os.MkdirAll("/work/sub", 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile("/work/sub/note.txt", []byte(args.Text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	back, err := os.ReadFile("work/sub/note.txt") // relative: the working directory is /
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"read_back": string(back), "before": names})
}
