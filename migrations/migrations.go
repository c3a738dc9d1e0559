// Package migrations carries the numbered SQL files that build toolgate's
// SQLite schema. The store applies them in name order, each in its own
// transaction, and records each one applied; a file once applied is never
// edited — a change of schema is a new file.
package migrations

import "embed"

// FS holds the *.sql files, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
