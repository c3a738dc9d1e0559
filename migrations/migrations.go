// Package migrations carries the numbered SQL files that build toolgate's
// schema, one set per SQL dialect. The store applies a set in name order,
// each file in its own transaction, and records each one applied in
// schema_migrations; a file once applied is never edited — a change of
// schema is a new file.
//
// The two sets are kept apart because the dialects differ in what a
// migration needs (SQLite rebuilds a table to drop a constraint, has no
// BOOLEAN, numbers events with AUTOINCREMENT) and because PostgreSQL
// started from the schema as SQLite's 0001–0007 left it, in one file. A
// change of schema from now on is a new file in both sets, saying the same
// in each dialect, so that the store's one SQL code path fits both:
//
//   - FS (the *.sql files here): SQLite, applied by the one process that
//     serves the file.
//   - Postgres (postgres/*.sql): PostgreSQL, applied by whichever node
//     starts first; the store holds a fixed advisory lock while it
//     migrates, so that nodes starting together apply each file once.
package migrations

import (
	"embed"
	"io/fs"
)

// FS holds the SQLite *.sql files, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS

//go:embed postgres/*.sql
var postgresFiles embed.FS

// Postgres holds the PostgreSQL *.sql files, named NNNN_description.sql.
var Postgres = mustSub(postgresFiles, "postgres")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
