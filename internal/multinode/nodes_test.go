package multinode_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the checks
	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// agentKey is every node's agent key: the nodes of one deployment share it.
const agentKey = "tga_multinode_agent_key"

// cluster is three nodes on one database.
type cluster struct {
	// Nodes are the `toolgate serve` processes, named node1, node2, …:
	// the name is also each one's application_name on PostgreSQL.
	Nodes []*gatewaytest.Gateway
	DBURL string
	// DB reads the shared database for the checks.
	DB *sqlx.DB
}

// startCluster creates a database and starts n nodes on it, all at once
// (the migrations must not race), then checks that all of them serve.
// extraArgs are added to every node's flags.
func startCluster(t *testing.T, n int, extraArgs ...string) *cluster {
	t.Helper()
	c := &cluster{DBURL: pg.Server(t).NewDatabase(t)}
	db, err := sqlx.Open("pgx", c.DBURL+"&application_name=multinode-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c.DB = db
	configs := make([]gatewaytest.Config, n)
	for i := range configs {
		name := fmt.Sprintf("node%d", i+1)
		configs[i] = gatewaytest.Config{
			Name: name, DB: c.DBURL + "&application_name=" + name, AgentKey: agentKey,
			Args: append([]string{"--address-session-rate", "off"}, extraArgs...), LogTail: 200,
		}
	}
	c.Nodes = gatewaytest.StartTogether(t, configs...)
	return c
}

// queryInts reads one integer column.
func (c *cluster) queryInts(t *testing.T, query string, args ...any) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []int64
	if err := c.DB.SelectContext(ctx, &out, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}
