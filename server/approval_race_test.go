package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
)

// Two decisions on one call awaiting approval, sent at the same moment:
// exactly one wins, whichever node each reaches. On PostgreSQL reads take
// no lock, so a check made by reading the call before writing let both
// through (review of issue 15, finding 1): both answered 200, a denied
// call had already been sent to its client, and two approves sent it
// twice.

// raceRounds is how many races of each kind a test runs.
const raceRounds = 20

// TestApprovalRacesOnPostgres: three nodes on one database; the call is
// created on node 0, whose stream its client holds, and the two decisions
// go to nodes 1 and 2.
func TestApprovalRacesOnPostgres(t *testing.T) {
	nodes := clusterNodes(t, 3, nil)
	raceDecisions(t, nodes[0], nodes[1], nodes[2])
}

// TestApprovalRacesOnSQLite: the same on one gateway, the two decisions
// from two goroutines.
func TestApprovalRacesOnSQLite(t *testing.T) {
	g := startGateway(t, nil)
	raceDecisions(t, g, g, g)
}

// raceDecisions runs raceRounds races of approve (through first) against
// deny (through second), then raceRounds of two approves, each on a fresh
// call to a tool that always needs approval, created through home; then
// checks what the client's stream on home was sent: a tool_call_request
// for each approved call exactly once, and nothing of a denied one.
func raceDecisions(t *testing.T, home, first, second *gateway) {
	s := home.newSession("phone")
	home.register(s, guardedTool, echoTool)
	client := home.openStream(s, "")

	approved := map[string]bool{} // calls whose approve won
	denied := map[string]bool{}
	for round := 0; round < raceRounds; round++ {
		call := home.startCall(s, "delete_photos", map[string]any{"album": "old"}, 0)
		if call.Status != "awaiting_approval" {
			t.Fatalf("round %d: created %+v", round, call)
		}
		results := atOnce(
			func() decision { return decide(first, "/v1/calls/"+call.ID+"/approve", nil) },
			func() decision {
				return decide(second, "/v1/calls/"+call.ID+"/deny", map[string]any{"reason": "not today"})
			},
		)
		approve, deny := results[0], results[1]
		switch {
		case approve.status == 200 && deny.status == 409 && deny.code == "CONFLICT" && approve.callStatus == "pending":
			approved[call.ID] = true
		case deny.status == 200 && approve.status == 409 && approve.code == "CALL_CLOSED" && deny.callStatus == "denied":
			denied[call.ID] = true
		default:
			t.Fatalf("round %d: approve %d %s, deny %d %s: want one 200 and the other 409", round,
				approve.status, approve.body, deny.status, deny.body)
		}
		want := "denied"
		if approved[call.ID] {
			want = "pending"
		}
		if got := home.waitCallNow(call.ID); got.Status != want && !(want == "pending" && got.Status == "delivered") {
			t.Fatalf("round %d: the call is %s after the %s won", round, got.Status, want)
		}
	}
	for round := 0; round < raceRounds; round++ {
		call := home.startCall(s, "delete_photos", map[string]any{"album": "new"}, 0)
		results := atOnce(
			func() decision { return decide(first, "/v1/calls/"+call.ID+"/approve", nil) },
			func() decision { return decide(second, "/v1/calls/"+call.ID+"/approve", nil) },
		)
		wins := 0
		for _, r := range results {
			switch {
			case r.status == 200 && r.callStatus == "pending":
				wins++
			case r.status == 409 && r.code == "CONFLICT":
			default:
				t.Fatalf("double approve, round %d: %d %s", round, r.status, r.body)
			}
		}
		if wins != 1 {
			t.Fatalf("double approve, round %d: %d approves answered 200: %s / %s", round, wins, results[0].body, results[1].body)
		}
		approved[call.ID] = true
	}
	t.Logf("approve won %d and deny %d of %d races", len(approved)-raceRounds, len(denied), raceRounds)

	// A call after all of them: once its request arrives, every event of
	// the session stored before it has been sent (a session's events go
	// out in the order they were stored).
	marker := home.startCall(s, "echo", map[string]any{"text": "last"}, 0)
	requests := map[string]int{}
	for {
		ev := client.next()
		id, _ := ev.Data["id"].(string)
		if ev.Event == "call_cancelled" && denied[id] {
			t.Fatalf("the client was told of denied call %s: %s", id, ev.Raw)
		}
		if ev.Event != "tool_call_request" {
			continue
		}
		if id == marker.ID {
			break
		}
		requests[id]++
	}
	for id := range denied {
		if requests[id] != 0 {
			t.Errorf("denied call %s was sent to the client", id)
		}
	}
	for id := range approved {
		if requests[id] != 1 {
			t.Errorf("approved call %s was sent to the client %d times, want once", id, requests[id])
		}
	}
	for id := range requests {
		if !approved[id] {
			t.Errorf("the client was sent call %s, which was not approved", id)
		}
	}
}

// decision is the reply to an approve or a deny.
type decision struct {
	status     int
	code       string // the error code of a refusal
	callStatus string // the call's status in a 200's record
	body       []byte
}

// decide posts a decision with the agent key. It reports a failed request
// as status 0 instead of failing the test, since it runs in a goroutine of
// its own.
func decide(g *gateway, path string, body any) decision {
	data, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", g.URL+path, bytes.NewReader(data))
	if err != nil {
		return decision{body: []byte(err.Error())}
	}
	req.Header.Set("Authorization", "Bearer "+testAgentKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return decision{body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	d := decision{status: resp.StatusCode}
	d.body, _ = io.ReadAll(resp.Body)
	if d.status == 200 {
		var rec callRecord
		json.Unmarshal(d.body, &rec)
		d.callStatus = rec.Status
	} else {
		d.code = errorCode(d.body)
	}
	return d
}

// atOnce runs the requests in goroutines released together, and returns
// their replies in order.
func atOnce(requests ...func() decision) []decision {
	results := make([]decision, len(requests))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, request := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = request()
		}()
	}
	close(start)
	wg.Wait()
	return results
}
