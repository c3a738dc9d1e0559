package store

import (
	"errors"
	"fmt"
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
