// Package mobile is the toolgate client SDK for phones, desktops and server
// programs: an app builds a Client from the gateway's URL, registers its
// tools, sets a handler and calls Connect; the client then receives
// tool_call_request events over Server-Sent Events (or long-poll where a
// proxy holds the stream back), runs the handler and posts the answers back
// until the gateway acknowledges them.
//
// Everything exported here can be bound by gomobile (gobind): only strings,
// integers, bools, byte slices, and structs or interfaces made of them cross
// the boundary, and JSON travels as strings. Go programs use the same API.
//
// The package also holds the Bridge, which turns external tool providers
// (other apps on a device speaking the CETP envelope) into namespaced,
// read-only tools of a Client.
//
// It imports only the root toolgate package and third-party libraries, never
// a server-side package.
package mobile
