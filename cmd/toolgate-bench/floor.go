package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// floorHandler is the loopback floor: POST /echo answers with its body, the
// least any HTTP round trip can cost on this machine.
func floorHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"ok"}`))
	})
	return mux
}

// httpServer is a plain net/http server on a loopback port.
type httpServer struct {
	URL string
	srv *http.Server
}

// startHTTPServer serves h on 127.0.0.1 at a free port.
func startHTTPServer(h http.Handler) (*httpServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &httpServer{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server and ends its connections (WebSockets included).
func (s *httpServer) Close() { s.srv.Close() }

// runServeCommand is the "serve-baseline" and "serve-floor" subcommands:
// the server runs as its own process, prints "SERVING <url>" and stops when
// its standard input closes (the harness closes it, or dies).
func runServeCommand(ctx context.Context, h http.Handler) error {
	s, err := startHTTPServer(h)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Printf("SERVING %s\n", s.URL)
	waitStdinClosed(ctx)
	return nil
}

// waitStdinClosed returns when standard input reaches its end or ctx ends.
func waitStdinClosed(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
