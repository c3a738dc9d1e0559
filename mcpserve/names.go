package mcpserve

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

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

// maxName is the longest name listed on /mcp: most model APIs refuse a
// function name over 64 characters.
const maxName = 64

// hashLen is how many hex digits of a name's SHA-256 stand for the part
// of it that was cut or mapped.
const hashLen = 8

// gatewayToolName is the name a tool called without a session is listed
// under: its own, when that is a valid name (every registered tool's
// is); else it goes through fitName.
func gatewayToolName(tool string) string { return fitName(tool, "") }

// sessionToolNames are the names a session's tool is offered on /mcp, in
// order of preference: <tool>__<the last 12 hex digits of the session id>
// (a UUIDv7's random part; its leading digits are a timestamp, alike for
// sessions created together), then <tool>__<all 32 hex digits> should
// another tool hold the first (48 random bits alike in two sessions, or
// an imported tool so named). Each is a function of the session id and
// the tool's name alone, so a tool gets the same name after a restart,
// whatever came first; a name over maxName is shortened (fitName).
func sessionToolNames(tool, sid string) []string {
	digits := sessionDigits(sid)
	short := digits
	if len(short) > 12 {
		short = short[len(short)-12:]
	}
	if short == digits {
		return []string{fitName(tool, "__"+digits)}
	}
	return []string{fitName(tool, "__"+short), fitName(tool, "__"+digits)}
}

// fitName is base+suffix as a name of at most maxName characters of
// [A-Za-z0-9_-]: the characters of base outside that set become '_', and
// when base was mapped so or the whole would be too long, base is cut and
// followed by '_' and the first hashLen hex digits of the SHA-256 of
// base as given, which keep names apart that the cut or the mapping made
// alike. suffix must be valid and short (a session's digits).
func fitName(base, suffix string) string {
	mapped := strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r == '-':
			return r
		}
		return '_'
	}, base)
	if mapped == base && base != "" && len(base)+len(suffix) <= maxName {
		return base + suffix
	}
	sum := sha256.Sum256([]byte(base))
	tag := "_" + hex.EncodeToString(sum[:])[:hashLen]
	room := maxName - len(suffix) - len(tag)
	if len(mapped) > room {
		mapped = mapped[:max(room, 0)]
	}
	return mapped + tag + suffix
}

// sessionDigits returns the session id without its dashes, and without
// any character an MCP name may not hold (ids are UUIDs; this only guards
// the names should that ever change), at most 32 of them.
func sessionDigits(sid string) string {
	d := strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			return r
		}
		return -1
	}, sid)
	if len(d) > 32 {
		d = d[len(d)-32:]
	}
	return d
}
