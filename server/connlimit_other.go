//go:build !unix

package server

// fileLimit reports that this platform's file-descriptor limit is not
// read: the connection limit falls back to connLimitFallback.
func fileLimit() (uint64, bool) { return 0, false }
