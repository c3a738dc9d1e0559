// Command passwd is a sandboxed tool that tries to read host files and
// answers what it got.
package main

import (
	"encoding/json"
	"os"
)

func main() {
	out := map[string]string{}
	for _, path := range []string{"/etc/passwd", "../../../../etc/passwd", "/proc/self/environ"} {
		b, err := os.ReadFile(path)
		if err != nil {
			out[path] = "error: " + err.Error()
		} else {
			out[path] = "read: " + string(b)
		}
	}
	// A symbolic link would be resolved by the host: it must be refused.
	if err := os.Symlink("../../../../etc/passwd", "link"); err != nil {
		out["symlink"] = "error: " + err.Error()
	} else if b, err := os.ReadFile("link"); err != nil {
		out["symlink"] = "error: " + err.Error()
	} else {
		out["symlink"] = "read: " + string(b)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
