// Package chaos holds the chaos test of toolgate (chaos_test.go): the real
// binary is killed with SIGKILL again and again while Go SDK clients answer
// calls and callers make them, and at the end every call created must have
// exactly one final state, no answer may have been applied twice, and no
// caller may have been left waiting. It runs only when TOOLGATE_CHAOS_KILLS
// is set (`make chaos`); RELIABILITY.md holds its figures.
package chaos
