package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Statements are prepared once, when the store opens, on the writer's
// connection and on the read pool: SQLite spends most of a small
// statement's time parsing and planning it, and the hot path of a call runs
// the same few statements over and over.
//
// A query is registered by declaring it through query or namedQuery at
// package level; the helpers below run a registered query through its
// prepared statement and any other query as it is.

var (
	registered      []string
	registeredNamed []string
)

// query registers a positional-argument statement for preparing.
func query(q string) string { registered = append(registered, q); return q }

// namedQuery registers a statement with :name arguments for preparing.
func namedQuery(q string) string { registeredNamed = append(registeredNamed, q); return q }

// prepared holds one database's prepared statements by their text.
type prepared struct {
	stmts map[string]*sqlx.Stmt
	named map[string]*sqlx.NamedStmt
}

func prepareAll(db *sqlx.DB, withNamed bool) (*prepared, error) {
	p := &prepared{stmts: map[string]*sqlx.Stmt{}, named: map[string]*sqlx.NamedStmt{}}
	for _, q := range registered {
		st, err := db.Preparex(q)
		if err != nil {
			return nil, fmt.Errorf("store: prepare %q: %w", q, err)
		}
		p.stmts[q] = st
	}
	if withNamed {
		for _, q := range registeredNamed {
			st, err := db.PrepareNamed(q)
			if err != nil {
				return nil, fmt.Errorf("store: prepare %q: %w", q, err)
			}
			p.named[q] = st
		}
	}
	return p, nil
}

func (p *prepared) close() {
	for _, st := range p.stmts {
		st.Close()
	}
	for _, st := range p.named {
		st.Close()
	}
}

// exec runs a write statement in the transaction.
func (tx *Tx) exec(q string, args ...any) (sql.Result, error) {
	if st := tx.prep.stmts[q]; st != nil {
		return tx.Stmtx(st).Exec(args...)
	}
	return tx.Exec(q, args...)
}

// get reads one row in the transaction.
func (tx *Tx) get(dest any, q string, args ...any) error {
	if st := tx.prep.stmts[q]; st != nil {
		return tx.Stmtx(st).Get(dest, args...)
	}
	return tx.Get(dest, q, args...)
}

// queryRow reads one row in the transaction, for scanning by hand.
func (tx *Tx) queryRow(q string, args ...any) *sql.Row {
	if st := tx.prep.stmts[q]; st != nil {
		return tx.Stmtx(st).QueryRow(args...)
	}
	return tx.QueryRow(q, args...)
}

// sel reads rows in the transaction.
func (tx *Tx) sel(dest any, q string, args ...any) error {
	if st := tx.prep.stmts[q]; st != nil {
		return tx.Stmtx(st).Select(dest, args...)
	}
	return tx.Select(dest, q, args...)
}

// namedExec runs a :name statement in the transaction with arg's fields.
func (tx *Tx) namedExec(q string, arg any) (sql.Result, error) {
	if st := tx.prep.named[q]; st != nil {
		return tx.NamedStmt(st).Exec(arg)
	}
	return tx.NamedExec(q, arg)
}

// get reads one row from the read pool.
func (s *Store) get(ctx context.Context, dest any, q string, args ...any) error {
	if st := s.readPrep.stmts[q]; st != nil {
		return st.GetContext(ctx, dest, args...)
	}
	return s.readers.GetContext(ctx, dest, q, args...)
}

// sel reads rows from the read pool.
func (s *Store) sel(ctx context.Context, dest any, q string, args ...any) error {
	if st := s.readPrep.stmts[q]; st != nil {
		return st.SelectContext(ctx, dest, args...)
	}
	return s.readers.SelectContext(ctx, dest, q, args...)
}

// rows runs a query on the read pool for scanning by hand.
func (s *Store) rows(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := s.readPrep.stmts[q]; st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.readers.QueryContext(ctx, q, args...)
}
