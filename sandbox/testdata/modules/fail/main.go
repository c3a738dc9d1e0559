// Command fail is a sandboxed tool that reports a failure: it prints to
// standard error and exits with status 3.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "the printer is on fire")
	fmt.Fprintln(os.Stderr, "second line")
	os.Exit(3)
}
