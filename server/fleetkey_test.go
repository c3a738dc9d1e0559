package server

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pgtest"
)

// Nodes on one database started with different agent keys are told so in
// the log (a caller would be refused by some of them only); a node started
// with the key the others have says nothing.
func TestNodesDisagreeingOnTheAgentKeyAreTold(t *testing.T) {
	pg := pgtest.For(t, pgtest.Options{}) // its Cleanup registered first: runs after the nodes stopped
	url := pg.NewDatabase(t)
	node := func(key string) *lockedBuffer {
		cfg := testConfig(t)
		cfg.DBPath, cfg.AgentKey = url, key
		logs := &lockedBuffer{}
		_, stop := startServerLogging(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
		t.Cleanup(stop)
		return logs
	}
	const told = "NODES DISAGREE ON THE AGENT KEY"
	if logs := node("tga_first"); strings.Contains(logs.String(), told) {
		t.Fatalf("the first node logged a disagreement:\n%s", logs)
	}
	if logs := node("tga_second"); !strings.Contains(logs.String(), told) {
		t.Fatalf("a node started with another key than the first's logged nothing of it:\n%s", logs)
	}
	if logs := node("tga_second"); strings.Contains(logs.String(), told) {
		t.Fatalf("a node started with the key the last node had logged a disagreement:\n%s", logs)
	}
}
