// Package engine is toolgate's core: it keeps sessions and their tools,
// dispatches calls to the streams and polls of the client that owns the
// tool, waits for answers, enforces deadlines, grace and expiry, and
// recovers open work at start-up. Every change goes through the store
// before anyone is told of it.
//
// It imports the root package and the store only. What it needs of the
// rest of the gateway it declares as an interface that the process
// provides at construction (BuiltinTools: the tools that run inside the
// gateway); what several nodes on one database change is behind an
// interface of its own, chosen by New (nodes.go).
package engine
