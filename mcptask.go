package toolgate

import "time"

// MCPTask is an MCP task (the tasks utility of MCP) as the gateway keeps
// it: a task is a call made through /mcp, so its id is the call's id and
// its state is the call's; this record adds what MCP needs besides: which
// route and which credential made it (only they see it), and how long it
// is kept.
type MCPTask struct {
	// ID is the task's id, the call's id (GET /v1/calls/{id}).
	ID string
	// Route is the MCP route that made it: "" for /mcp, else the session
	// id of /mcp/sessions/{sid}.
	Route string
	// Owner identifies the credential that made it (a hash, never the
	// secret itself).
	Owner string
	// CreatedAt is when it was made; it is gone after CreatedAt + TTL.
	CreatedAt time.Time
	TTL       time.Duration
}

// ExpiresAt is when the task is gone.
func (t *MCPTask) ExpiresAt() time.Time { return t.CreatedAt.Add(t.TTL) }
