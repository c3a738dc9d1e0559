package store

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrClosed is returned by writes submitted after Close.
var ErrClosed = errors.New("store: closed")

// ErrDuplicateIdempotencyKey is the error of [Tx.InsertCall] (found with
// errors.Is) when another call already holds the new call's
// idempotency key: a retried request that raced the first one.
var ErrDuplicateIdempotencyKey = errors.New("store: a call with this idempotency key already exists")

// isUniqueViolation reports whether err is SQLite refusing a second row
// with a value a UNIQUE index holds already (not the primary key, which
// SQLite reports with a code of its own).
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// uniqueAs returns err as sentinel when it is a UNIQUE violation, keeping
// the driver's error in the chain; any other error as it is.
func uniqueAs(err error, sentinel error) error {
	if isUniqueViolation(err) {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	return err
}
