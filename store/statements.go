package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// Statements are prepared once, when the store opens, on the writer's
// connection and on the read pool: SQLite spends most of a small
// statement's time parsing and planning it, and the hot path of a call runs
// the same few statements over and over.
//
// A query is registered by declaring it through query at package level;
// the helpers below run a registered query through its prepared statement
// and any other query as it is. A statement with :name arguments is
// prepared on the writer's connection the first time it runs (namedExec).

var registered []string

// query registers a positional-argument statement for preparing.
func query(q string) string { registered = append(registered, q); return q }

// preparer is what statements are prepared on: the read pool, or the
// writer's one connection.
type preparer interface {
	PreparexContext(ctx context.Context, query string) (*sqlx.Stmt, error)
}

// On PostgreSQL nothing is prepared here (readPrep and writePrep hold no
// statement): pgx prepares and caches each statement on its connection
// itself. A query is rebound from ? to $1, $2, ... (dollar) as it runs.

// dollarQueries caches each query rebound for PostgreSQL.
var dollarQueries sync.Map // string → string

// dollar returns q with its ? placeholders numbered for PostgreSQL.
func dollar(q string) string {
	if d, ok := dollarQueries.Load(q); ok {
		return d.(string)
	}
	d := sqlx.Rebind(sqlx.DOLLAR, q)
	dollarQueries.Store(q, d)
	return d
}

// reads runs the store's reads on its read pool (on PostgreSQL, the pool
// the writes share), through the statements prepared on it.
type reads struct {
	db       *sqlx.DB
	prep     *prepared
	postgres bool // the pool is PostgreSQL's
}

// bind returns q as the store's database takes it.
func (r *reads) bind(q string) string {
	if r.postgres {
		return dollar(q)
	}
	return q
}

// prepared holds the statements prepared on one preparer, by their text.
type prepared struct {
	on    preparer
	stmts map[string]*sqlx.Stmt
}

func prepareAll(on preparer) (*prepared, error) {
	p := &prepared{on: on, stmts: map[string]*sqlx.Stmt{}}
	for _, q := range registered {
		if _, err := p.prepare(q); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// prepare returns the statement for q, preparing it the first time.
// Statements not registered at start are prepared here only on the
// writer's connection, from its one goroutine.
func (p *prepared) prepare(q string) (*sqlx.Stmt, error) {
	if st := p.stmts[q]; st != nil {
		return st, nil
	}
	st, err := p.on.PreparexContext(context.Background(), q)
	if err != nil {
		return nil, fmt.Errorf("store: prepare %q: %w", q, err)
	}
	p.stmts[q] = st
	return st, nil
}

func (p *prepared) close() {
	for _, st := range p.stmts {
		st.Close()
	}
}

// exec runs a write statement in the transaction.
func (tx *Tx) exec(q string, args ...any) (sql.Result, error) {
	if tx.pg != nil {
		return tx.pg.ExecContext(tx.ctx, dollar(q), args...)
	}
	if st := tx.prep.stmts[q]; st != nil {
		return st.Exec(args...)
	}
	return tx.conn.ExecContext(context.Background(), q, args...)
}

// get reads one row in the transaction.
func (tx *Tx) get(dest any, q string, args ...any) error {
	if tx.pg != nil {
		return tx.pg.GetContext(tx.ctx, dest, dollar(q), args...)
	}
	if st := tx.prep.stmts[q]; st != nil {
		return st.Get(dest, args...)
	}
	return tx.conn.GetContext(context.Background(), dest, q, args...)
}

// sel reads rows in the transaction.
func (tx *Tx) sel(dest any, q string, args ...any) error {
	if tx.pg != nil {
		return tx.pg.SelectContext(tx.ctx, dest, dollar(q), args...)
	}
	if st := tx.prep.stmts[q]; st != nil {
		return st.Select(dest, args...)
	}
	return tx.conn.SelectContext(context.Background(), dest, q, args...)
}

// namedExec runs a statement with :name arguments, taken from arg's
// fields, in the transaction. Its positional form is prepared on first use.
func (tx *Tx) namedExec(q string, arg any) (sql.Result, error) {
	positional, args, err := sqlx.Named(q, arg)
	if err != nil {
		return nil, err
	}
	if tx.pg != nil {
		return tx.exec(positional, args...)
	}
	st, err := tx.prep.prepare(positional)
	if err != nil {
		return nil, err
	}
	return st.Exec(args...)
}

// rowOrNil is a one-row read's outcome as a pointer: r when the row was
// read, nil and no error when there was none, nil and err otherwise.
func rowOrNil[T any](r *T, err error) (*T, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// get reads one row from the read pool; on PostgreSQL within readTimeout,
// its error as failed reports it.
func (r *reads) get(ctx context.Context, dest any, q string, args ...any) error {
	if st := r.prep.stmts[q]; st != nil {
		return st.GetContext(ctx, dest, args...)
	}
	if !r.postgres {
		return r.db.GetContext(ctx, dest, q, args...)
	}
	limited, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return r.failed(ctx, r.db.GetContext(limited, dest, dollar(q), args...))
}

// sel reads rows from the read pool; on PostgreSQL within readTimeout,
// its error as failed reports it.
func (r *reads) sel(ctx context.Context, dest any, q string, args ...any) error {
	if st := r.prep.stmts[q]; st != nil {
		return st.SelectContext(ctx, dest, args...)
	}
	if !r.postgres {
		return r.db.SelectContext(ctx, dest, q, args...)
	}
	limited, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return r.failed(ctx, r.db.SelectContext(limited, dest, dollar(q), args...))
}

// rows runs a query on the read pool for scanning by hand; on PostgreSQL
// its error is as failed reports it (the rows outlive this call, so
// statement_timeout, not readTimeout, bounds them).
func (r *reads) rows(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := r.prep.stmts[q]; st != nil {
		return st.QueryContext(ctx, args...)
	}
	rows, err := r.db.QueryContext(ctx, r.bind(q), args...)
	return rows, r.failed(ctx, err)
}
