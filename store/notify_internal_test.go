package store

import (
	"fmt"
	"reflect"
	"testing"
)

// Many changes are split into payloads under PostgreSQL's limit, each
// naming the sender; a node reads back every change of another node's
// payloads and none of its own.
func TestPayloadsSplitAndRoundTrip(t *testing.T) {
	var changes []Change
	for i := range 1000 {
		changes = append(changes, Change{Kind: ChangeCall, ID: fmt.Sprintf("0190f2a8-7c1e-7000-8000-%012d", i)})
	}
	changes = append(changes, Change{Kind: ChangeEvents, ID: "s"}, Change{Kind: ChangeSession, ID: "r"})
	payloads := encodePayloads("node-a", changes)
	if len(payloads) < 2 {
		t.Fatalf("%d payloads for %d changes", len(payloads), len(changes))
	}
	var back []Change
	for _, p := range payloads {
		if len(p) >= 8000 {
			t.Fatalf("a payload of %d bytes", len(p))
		}
		if own := decodePayload("node-a", p); own != nil {
			t.Fatalf("a node read its own payload: %v", own)
		}
		back = append(back, decodePayload("node-b", p)...)
	}
	if !reflect.DeepEqual(back, changes) {
		t.Fatalf("read back %d changes, want the %d sent", len(back), len(changes))
	}
}
