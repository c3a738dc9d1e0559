package mcpimport

import (
	"crypto/sha256"
	"encoding/hex"
)

// nameHashLen is how many hex digits of the SHA-256 of a tool's own name
// end a gateway name that had to be cut.
const nameHashLen = 8

// importedToolName is the gateway's name of the server's tool remote:
// prefix (NAME__) and remote with the characters outside [A-Za-z0-9_-]
// replaced by '_' (gatewayToolName); when that is longer than
// maxToolName, remote's part is cut and followed by '_' and the first
// nameHashLen hex digits of the SHA-256 of remote, which keep tools apart
// that the cut made alike, and give a tool the same name at every
// listing.
func importedToolName(prefix, remote string) string {
	name := prefix + gatewayToolName(remote)
	if len(name) <= maxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(remote))
	tag := "_" + hex.EncodeToString(sum[:])[:nameHashLen]
	return name[:maxToolName-len(tag)] + tag
}
