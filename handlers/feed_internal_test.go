package handlers

import "testing"

// TestFeedLimitCountsStayingMembers: a member marked leaving does not count
// against the feed's limit, so a session can join a full stream as soon as
// another one has left, before the stream's next collect drops it.
func TestFeedLimitCountsStayingMembers(t *testing.T) {
	f := newFeed(nil, 2)
	for _, sid := range []string{"s1", "s2"} {
		if ok, why := f.add(&member{sid: sid}); !ok {
			t.Fatalf("add %s refused (%d)", sid, why)
		}
	}
	if !f.full() {
		t.Fatal("a feed of 2 members with limit 2 is not full")
	}
	if ok, why := f.add(&member{sid: "s3"}); ok || why != feedFull {
		t.Fatalf("a third member: added %v (%d), want refused as full", ok, why)
	}
	if !f.leave("s2", "left") {
		t.Fatal("s2 is not on the feed")
	}
	if f.full() {
		t.Error("a feed whose second member is leaving counts as full")
	}
	if ok, why := f.add(&member{sid: "s3"}); !ok {
		t.Errorf("a member joining while another leaves was refused (%d)", why)
	}
	if ok, why := f.add(&member{sid: "s4"}); ok || why != feedFull {
		t.Errorf("a fourth member: added %v (%d), want refused as full", ok, why)
	}
}
