package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolgate/toolgate"
)

// ErrClosed is returned by writes submitted after Close.
var ErrClosed = errors.New("store: closed")

// ErrDuplicateIdempotencyKey is the error of [Tx.InsertCall] (found with
// errors.Is) when another call already holds the new call's
// idempotency key: a retried request that raced the first one.
var ErrDuplicateIdempotencyKey = errors.New("store: a call with this idempotency key already exists")

// ErrStorageFull is found (with errors.Is) in the error of a write that
// was not stored because the disk holding the database has no space left.
// The write was rolled back; the same write succeeds once space is freed.
// The error's chain also holds a *toolgate.Error with the code
// STORAGE_FULL, so that it reaches a client as such (503) and not as an
// internal error.
var ErrStorageFull = errors.New("store: the disk holding the database is full")

// ErrUnavailable is found (with errors.Is) in the error of a read or write
// the database could not serve right now: on PostgreSQL, a connection that
// failed or was cut, a server shutting down or starting, a lock or a
// statement that waited past lock_timeout or statement_timeout, an
// attempt past its own time limit. The error's chain also holds a
// *toolgate.Error with the code STORAGE_UNAVAILABLE (503, Retry-After),
// so that it reaches a client as such and not as an internal error; the
// same request succeeds once the database answers again.
var ErrUnavailable = errors.New("store: the database cannot be reached")

// isUniqueViolation reports whether err is the database refusing a second
// row with a value a UNIQUE index holds already, not the primary key
// (which SQLite reports with a code of its own, and PostgreSQL names by
// its constraint, <table>_pkey).
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pgUniqueViolation && !strings.HasSuffix(pe.ConstraintName, "_pkey")
}

// PostgreSQL's error codes the store tells apart.
const (
	pgUniqueViolation      = "23505"
	pgDiskFull             = "53100"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"

	// The database cannot serve right now (isUnavailable); class 08,
	// connection exceptions, too.
	pgLockNotAvailable    = "55P03" // lock_timeout
	pgQueryCanceled       = "57014" // statement_timeout, a cancel request
	pgAdminShutdown       = "57P01" // pg_terminate_backend, a fast stop
	pgCrashShutdown       = "57P02"
	pgCannotConnectNow    = "57P03" // starting up or shutting down
	pgTooManyConnections  = "53300"
	pgConnectionException = "08"

	// Text PostgreSQL refuses in a TEXT value (isUnstorableText).
	pgCharacterNotInRepertoire = "22021" // NUL, invalid UTF-8
	pgUntranslatableCharacter  = "22P05"
)

// isRetryable reports whether err is PostgreSQL giving up a transaction
// that succeeds when run again: a serialization failure or a deadlock.
func isRetryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == pgSerializationFailure || pe.Code == pgDeadlockDetected)
}

// uniqueAs returns err as sentinel when it is a UNIQUE violation, keeping
// the driver's error in the chain; any other error as it is.
func uniqueAs(err error, sentinel error) error {
	if isUniqueViolation(err) {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	return err
}

// isNoSpace reports whether err is the database failing for want of disk
// space: SQLITE_FULL (a write to the database or its WAL got ENOSPC),
// SQLITE_IOERR_SHMSIZE (the WAL index could not be grown, which on a
// full disk is the same cause), or PostgreSQL's disk_full.
func isNoSpace(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == pgDiskFull
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code()&0xff == sqlite3.SQLITE_FULL || se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE
}

// storageFullAs returns err as a storageFullError when the database failed it
// for want of disk space (once: an error already translated is returned
// as it is); any other error as it is.
func storageFullAs(err error) error {
	if err == nil || errors.Is(err, ErrStorageFull) || !isNoSpace(err) {
		return err
	}
	return storageFullError{driver: err}
}

// storageFullError is a write refused for want of disk space: it is
// ErrStorageFull, a *toolgate.Error with STORAGE_FULL, and the driver's
// error, in that order.
type storageFullError struct{ driver error }

func (e storageFullError) Error() string {
	return ErrStorageFull.Error() + ": " + e.driver.Error()
}

func (e storageFullError) Unwrap() []error {
	return []error{ErrStorageFull, toolgate.Errorf(toolgate.EStorageFull,
		"the disk holding the gateway's database is full, so this change was not stored; nothing was changed: retry once the operator has freed space"),
		e.driver}
}

// isUnavailable reports whether err is PostgreSQL not serving right now
// rather than refusing the request itself: a connection that could not be
// made or broke (its network error, io.EOF, a connection exception), a
// server shutting down or starting up, too many connections, or a wait
// past lock_timeout or statement_timeout.
func isUnavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgLockNotAvailable, pgQueryCanceled, pgAdminShutdown, pgCrashShutdown, pgCannotConnectNow, pgTooManyConnections:
			return true
		}
		return strings.HasPrefix(pe.Code, pgConnectionException)
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn)
}

// isUnstorableText reports whether err is PostgreSQL refusing a text
// value: a NUL character or bytes that are not UTF-8 (which SQLite
// stores as they are).
func isUnstorableText(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == pgCharacterNotInRepertoire || pe.Code == pgUntranslatableCharacter)
}

// postgresErrorAs returns a PostgreSQL error as the store reports it: an
// unavailableError when the database could not serve (isUnavailable), an
// unstorableTextError when it refused a text value, a storageFullError on
// a full disk; any other error (and one already translated) as it is.
func postgresErrorAs(err error) error {
	var te *toolgate.Error
	switch {
	case err == nil || errors.As(err, &te): // translated already, or an operation's own
		return err
	case isUnstorableText(err):
		return unstorableTextError{driver: err}
	case isUnavailable(err):
		return unavailableError{driver: err}
	}
	return storageFullAs(err)
}

// failed returns the error of a read from the pool as the store
// reports it. On SQLite it is err as it is. On PostgreSQL, a read the
// caller's own ctx ended keeps ctx's error in its chain (a client that
// went away is nobody's fault); any other is translated by
// postgresErrorAs.
func (r *reads) failed(ctx context.Context, err error) error {
	if err == nil || !r.postgres {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return err
		}
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	return postgresErrorAs(err)
}

// unavailableError is a read or write the database could not serve right
// now: it is ErrUnavailable, a *toolgate.Error with STORAGE_UNAVAILABLE,
// and the driver's error, in that order. The message is the client's.
type unavailableError struct {
	driver  error
	message string // "" for the usual one
}

func (e unavailableError) Error() string {
	return ErrUnavailable.Error() + ": " + e.driver.Error()
}

func (e unavailableError) Unwrap() []error {
	message := e.message
	if message == "" {
		message = "the gateway's database cannot be reached or did not answer in time, so this request was not served: retry shortly"
	}
	te := toolgate.Errorf(toolgate.EStorageUnavailable, "%s", message)
	te.RetryAfterSeconds = 1
	return []error{ErrUnavailable, te, e.driver}
}

// unstorableTextError is a text value PostgreSQL refused: a
// *toolgate.Error with BAD_REQUEST, then the driver's error.
type unstorableTextError struct{ driver error }

func (e unstorableTextError) Error() string {
	return "store: the database refuses a text value: " + e.driver.Error()
}

func (e unstorableTextError) Unwrap() []error {
	return []error{toolgate.Errorf(toolgate.EBadRequest,
		"text holds a character the database refuses (NUL or invalid UTF-8)"), e.driver}
}
