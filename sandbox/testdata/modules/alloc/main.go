// Command alloc is a sandboxed tool that allocates without end.
package main

import "fmt"

func main() {
	var kept [][]byte
	for {
		kept = append(kept, make([]byte, 1<<20))
		kept[len(kept)-1][0] = 1
		if len(kept) < 0 {
			fmt.Println(len(kept))
		}
	}
}
