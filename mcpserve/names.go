package mcpserve

import "strings"

// toolKey names one tool the gateway knows: its session ("" for a tool
// called without one) and its own name there.
type toolKey struct {
	session string
	tool    string
}

// nameTable gives the tools listed on /mcp their MCP names, unique within
// the listing and stable while listed: a tool keeps the name it was first
// given until it leaves the listing, even when another tool would now
// prefer it. Only the sync goroutine uses it.
type nameTable struct {
	byName map[string]toolKey
	byKey  map[toolKey]string
}

func newNameTable() *nameTable {
	return &nameTable{byName: map[string]toolKey{}, byKey: map[toolKey]string{}}
}

// assign returns k's name: the one it has, else the first of candidates
// no other tool holds ("" when all are taken: the tool is not listed).
func (n *nameTable) assign(k toolKey, candidates ...string) string {
	if name, ok := n.byKey[k]; ok {
		return name
	}
	for _, name := range candidates {
		if name == "" {
			continue
		}
		if _, taken := n.byName[name]; !taken {
			n.byName[name] = k
			n.byKey[k] = name
			return name
		}
	}
	return ""
}

// release frees k's name, if it has one.
func (n *nameTable) release(k toolKey) {
	if name, ok := n.byKey[k]; ok {
		delete(n.byKey, k)
		delete(n.byName, name)
	}
}

// sessionToolNames are the names a session's tool is offered on /mcp, in
// order of preference: <tool>__<the last 12 hex digits of the session id>
// (a UUIDv7's random part; its leading digits are a timestamp, alike for
// sessions created together), then <tool>__<all 32 hex digits>.
func sessionToolNames(tool, sid string) []string {
	digits := sessionDigits(sid)
	short := digits
	if len(short) > 12 {
		short = short[len(short)-12:]
	}
	if short == digits {
		return []string{tool + "__" + digits}
	}
	return []string{tool + "__" + short, tool + "__" + digits}
}

// sessionDigits returns the session id without its dashes, and without
// any character an MCP name may not hold (ids are UUIDs; this only guards
// the names should that ever change).
func sessionDigits(sid string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			return r
		}
		return -1
	}, sid)
}
