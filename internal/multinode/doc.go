// Package multinode holds the multi-node tests of toolgate:
// three real `toolgate serve` processes on one PostgreSQL database (a
// throwaway server from package pgtest), each on its own loopback port.
// A client on one node, a caller on another and the answer through the
// third; per-session event order with calls made on every node at once;
// one answer winning whatever node it reaches; each node killed with
// SIGKILL in turn behind a round-robin proxy, with nothing lost and
// nothing answered twice; one node's database connections cut; deadlines
// and expiry swept by another node when one dies. `make multinode` runs
// them (they need Debian's postgresql package, which `make postgres`
// installs).
package multinode
