// Package web carries the browser SDK (an ES module usable without a build
// step) and the page the gateway serves at "/". The files live in static/ and
// are embedded into the binary, so a gateway needs nothing beside itself.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

// Assets returns the embedded web files rooted at static/: "index.html",
// "toolgate.js" and whatever else the page needs.
func Assets() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		// fs.Sub fails only on an invalid path, and "static" is a constant.
		panic(err)
	}
	return sub
}
