package mobile

import (
	"encoding/json"
	"time"
)

// pathState is what the client learned of its path to the gateway, for
// the app (ConnectionInfo). Guarded by Client.mu.
type pathState struct {
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
func (c *Client) noteStream(heartbeat time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.path.heartbeat = heartbeat
}

// noteCut records a connection that ended, age after it went live,
// without the gateway ending it.
func (c *Client) noteCut(age time.Duration, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.path.cuts++
	c.path.lastCut = &cutInfo{At: time.Now().UTC(), AfterMS: age.Milliseconds(), Why: why}
}

// noteProbing records whether the client is on the poll in place of a
// held-back stream, probing the stream now and then.
func (c *Client) noteProbing(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.path.probing = on
}

// ConnectionInfo returns, as a JSON object, what the client uses and has
// learned of its path to the gateway: "transport" ("sse", "poll" or ""
// while not connected), "heartbeat_ms" (the ping interval of the current
// stream, 0 on the poll), "probing" (on the poll because a proxy held the
// stream back, probing the stream now and then), "cuts" (connections that
// ended without the gateway ending them) and "last_cut" ({"at",
// "after_ms", "why"} or null).
func (c *Client) ConnectionInfo() string {
	c.mu.Lock()
	info := struct {
		Transport   string   `json:"transport"`
		HeartbeatMS int64    `json:"heartbeat_ms"`
		Probing     bool     `json:"probing"`
		Cuts        int64    `json:"cuts"`
		LastCut     *cutInfo `json:"last_cut"`
	}{Probing: c.path.probing, Cuts: c.path.cuts, LastCut: c.path.lastCut}
	if c.state == StateConnected {
		info.Transport = c.transport
		if c.transport == TransportSSE {
			info.HeartbeatMS = c.path.heartbeat.Milliseconds()
		}
	}
	c.mu.Unlock()
	b, _ := json.Marshal(info)
	return string(b)
}
