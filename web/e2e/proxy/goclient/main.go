// Command goclient is the Go SDK's client in the proxy matrix
// (web/e2e/proxy): it offers one tool, go_echo, to a gateway with the
// mobile package's default settings, reaching it through a forward proxy
// when -proxy is given (as an app sets its HTTP proxy), or through a
// reverse proxy when -gateway names one. It prints one JSON line per
// event on standard output ({"session_id"} once connected, {"state"} at
// every change, {"call"} per call answered) and runs until its standard
// input closes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/toolgate/toolgate/mobile"
)

// out writes the JSON lines; the SDK's listener and handler call it from
// their own goroutines.
type out struct{ mu sync.Mutex }

func (o *out) line(v map[string]any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v["at_ms"] = time.Now().UnixMilli()
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

// OnStateChange reports each connection state.
func (o *out) OnStateChange(state, detail string) {
	o.line(map[string]any{"state": state, "detail": detail})
}

// Log reports the SDK's warnings and errors.
func (o *out) Log(level, message string) {
	if level == mobile.LevelWarn || level == mobile.LevelError {
		o.line(map[string]any{"log": level, "message": message})
	}
}

// echo answers every call with the time it ran.
type echo struct{ o *out }

// Handle answers a call of go_echo.
func (e echo) Handle(callID, toolName, argsJSON string) (string, error) {
	e.o.line(map[string]any{"call": callID})
	return fmt.Sprintf(`{"answered_at_ms":%d}`, time.Now().UnixMilli()), nil
}

func main() {
	gateway := flag.String("gateway", "", "the gateway's URL (or a reverse proxy's)")
	proxy := flag.String("proxy", "", "a forward proxy's URL, for every request to the gateway")
	transport := flag.String("transport", "", "auto, sse or poll (SetTransport); empty keeps the SDK's default")
	readyTimeout := flag.Int64("ready-timeout-ms", 0, "the stream's ready timeout (SetReadyTimeoutMS); 0 keeps the SDK's default")
	flag.Parse()
	if *gateway == "" {
		fmt.Fprintln(os.Stderr, "goclient: -gateway is required")
		os.Exit(2)
	}
	if *proxy != "" {
		u, err := url.Parse(*proxy)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goclient: -proxy:", err)
			os.Exit(2)
		}
		// As an app sets its proxy: the client copies the default
		// transport's settings when it is made. (HTTP_PROXY would not do:
		// net/http never proxies a loopback address from the environment.)
		http.DefaultTransport.(*http.Transport).Proxy = http.ProxyURL(u)
	}
	o := &out{}
	client := mobile.NewClient(*gateway)
	client.SetClientInfo("proxy-matrix", "1", "desktop")
	client.SetListener(o)
	client.SetLogger(o)
	if *transport != "" {
		if err := client.SetTransport(*transport); err != nil {
			fmt.Fprintln(os.Stderr, "goclient:", err)
			os.Exit(2)
		}
	}
	if *readyTimeout > 0 {
		client.SetReadyTimeoutMS(*readyTimeout)
	}
	if err := client.RegisterTool("go_echo", "Answers at once with the time it ran", `{"type":"object","properties":{}}`); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
	client.SetHandler(echo{o})
	if err := client.Connect(); err != nil {
		fmt.Fprintln(os.Stderr, "goclient: connect:", err)
		os.Exit(1)
	}
	o.line(map[string]any{"session_id": client.SessionID()})
	_, _ = io.Copy(io.Discard, os.Stdin)
	client.Close()
}
