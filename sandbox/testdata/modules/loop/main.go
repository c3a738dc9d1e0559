// Command loop is a sandboxed tool that never ends: it spins, or with
// {"sleep": true} sleeps, until the gateway interrupts it.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func main() {
	var args struct {
		Sleep bool `json:"sleep"`
	}
	json.NewDecoder(os.Stdin).Decode(&args)
	if args.Sleep {
		time.Sleep(24 * time.Hour)
	}
	n := 0
	for {
		n++
		if n == -1 {
			fmt.Println(n)
		}
	}
}
