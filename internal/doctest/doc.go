// Package doctest holds the tests of toolgate's documentation (its _test
// files): every fenced block of README.md and docs/guides that a reader would
// paste is marked with the test that runs it (or why it is not run), the
// README's and the guides' examples run as they stand against a real gateway
// — the Go programs built, vetted and run in a module of their own, the shell
// blocks with bash, the page snippet checked by node — and the docs keep their
// shape: README.md at most 320 lines, the error codes of docs/PROTOCOL.md
// those of error.go, the layout table naming every package, no issue number
// cited in a doc or a Go string.
package doctest
