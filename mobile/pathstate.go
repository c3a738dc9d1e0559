package mobile

import (
	"encoding/json"
	"sync"
	"time"
)

// pathState is what the client learned of its path to the gateway, for
// the app (ConnectionInfo).
type pathState struct {
	mu        sync.Mutex
	heartbeat time.Duration // of the current stream; zero on the poll
	cuts      int64         // connections that ended without the gateway ending them
	lastCut   *cutInfo
	probing   bool // on the long-poll, probing the stream now and then
}

// cutInfo is the last connection that ended without the gateway ending it.
type cutInfo struct {
	At      time.Time `json:"at"`
	AfterMS int64     `json:"after_ms"`
	Why     string    `json:"why"`
}

// noteStream records the heartbeat of a stream that went live (zero: the
// client is on the poll).
func (p *pathState) noteStream(heartbeat time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heartbeat = heartbeat
}

// noteCut records a connection that ended, age after it went live,
// without the gateway ending it.
func (p *pathState) noteCut(age time.Duration, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts++
	p.lastCut = &cutInfo{At: time.Now().UTC(), AfterMS: age.Milliseconds(), Why: why}
}

// noteProbing records whether the client is on the poll in place of a
// held-back stream, probing the stream now and then.
func (p *pathState) noteProbing(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probing = on
}

// connectionInfo is ConnectionInfo's object.
type connectionInfo struct {
	Transport   string   `json:"transport"`
	HeartbeatMS int64    `json:"heartbeat_ms"`
	Probing     bool     `json:"probing"`
	Cuts        int64    `json:"cuts"`
	LastCut     *cutInfo `json:"last_cut"`
}

// info returns what the path state says, for a client on transport ("",
// "sse" or "poll").
func (p *pathState) info(transport string) connectionInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := connectionInfo{Transport: transport, Probing: p.probing, Cuts: p.cuts, LastCut: p.lastCut}
	if transport == TransportSSE {
		info.HeartbeatMS = p.heartbeat.Milliseconds()
	}
	return info
}

// ConnectionInfo returns, as a JSON object, what the client uses and has
// learned of its path to the gateway: "transport" ("sse", "poll" or ""
// while not connected), "heartbeat_ms" (the ping interval of the current
// stream, 0 on the poll), "probing" (on the poll because a proxy held the
// stream back, probing the stream now and then), "cuts" (connections that
// ended without the gateway ending them) and "last_cut" ({"at",
// "after_ms", "why"} or null).
func (c *Client) ConnectionInfo() string {
	b, _ := json.Marshal(c.path.info(c.Transport()))
	return string(b)
}
