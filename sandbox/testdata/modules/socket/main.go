// Command socket is a sandboxed tool that tries to reach a host's port
// ({"addr": "127.0.0.1:PORT"}) and answers what it got. (Go's wasip1
// runtime simulates sockets inside the module: a listener it opens is its
// own, not the host's.)
package main

import (
	"encoding/json"
	"net"
	"os"
)

func main() {
	var args struct {
		Addr string `json:"addr"`
	}
	json.NewDecoder(os.Stdin).Decode(&args)
	out := map[string]string{}
	if conn, err := net.Dial("tcp", args.Addr); err != nil {
		out["dial"] = "error: " + err.Error()
	} else {
		conn.Close()
		out["dial"] = "connected"
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
