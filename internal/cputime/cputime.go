// Package cputime reads the CPU time the current process has used, for
// benchmarks that report it per operation: on a shared machine other load
// slows the wall clock far more than it changes the work done per call.
package cputime
