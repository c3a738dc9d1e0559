// Command scratch is a sandboxed tool that uses its scratch directory: it
// writes {"text"} to a file, reads it back and answers it with the
// directory's entries before it wrote. {"fill_mb": N} writes N MiB.
// {"sparse": true} writes one byte at 1 TiB into a file, by WriteAt and
// by Seek then Write, and answers what each gave.
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
		Sparse bool   `json:"sparse"`
	}
	json.NewDecoder(os.Stdin).Decode(&args)
	if args.Sparse {
		json.NewEncoder(os.Stdout).Encode(sparse())
		return
	}
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

// sparse writes one byte 1 TiB into a file, two ways, and says what each
// gave and how large the file then is.
func sparse() map[string]string {
	out := map[string]string{}
	result := func(key string, err error) {
		if err != nil {
			out[key] = "error: " + err.Error()
		} else {
			out[key] = "written"
		}
	}
	f, err := os.Create("sparse")
	if err != nil {
		out["create"] = "error: " + err.Error()
		return out
	}
	defer f.Close()
	_, err = f.WriteAt([]byte("x"), 1<<40)
	result("write_at", err)
	if _, err = f.Seek(1<<40, 0); err == nil {
		_, err = f.Write([]byte("x"))
	}
	result("seek_write", err)
	if st, err := f.Stat(); err == nil {
		out["size"] = fmt.Sprint(st.Size())
	}
	return out
}
