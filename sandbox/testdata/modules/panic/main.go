// Command panic is a sandboxed tool that panics.
package main

func main() {
	var m map[string]int
	m["boom"] = 1 // assignment to entry in nil map
}
