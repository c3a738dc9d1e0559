package handlers

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// The request envelope's strict check (toolgate.CheckStrictJSONBody) is
// one more pass over the body: these compare decoding a call's envelope
// with it (decodeBytes) and without it (decodeChecked), for a typical
// call and one with 64 KiB of args.

func benchmarkDecodeCall(b *testing.B, body []byte, checked bool) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var req toolgate.CallRequest
		var err error
		if checked {
			err = decodeBytes(body, &req, true)
		} else {
			err = decodeChecked(body, &req, true)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

var (
	typicalCallBody = []byte(`{"session_id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","tool":"search_notes",` +
		`"args":{"text":"ping","count":3,"options":{"lang":"en","tags":["a","b"]}},"timeout_ms":5000}`)
	largeCallBody = []byte(`{"tool":"save_note","args":{"items":[` +
		strings.TrimSuffix(strings.Repeat(`{"title":"a note","body":"some text of the note","done":false},`, 1000), ",") + `]}}`)
)

func BenchmarkDecodeCallEnvelope(b *testing.B)        { benchmarkDecodeCall(b, typicalCallBody, true) }
func BenchmarkDecodeCallEnvelopeNoCheck(b *testing.B) { benchmarkDecodeCall(b, typicalCallBody, false) }
func BenchmarkDecodeLargeCallEnvelope(b *testing.B)   { benchmarkDecodeCall(b, largeCallBody, true) }
func BenchmarkDecodeLargeCallEnvelopeNoCheck(b *testing.B) {
	benchmarkDecodeCall(b, largeCallBody, false)
}
