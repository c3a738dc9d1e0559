# toolgate — the commands a developer and CI use. `make run` serves the
# gateway with its embedded defaults; `make test` runs the test suite.
GO ?= go
SUDO = $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: run build test vet race e2e mobile-check bench chaos postgres multinode openapi-lint

run:
	$(GO) run ./cmd/toolgate serve

build:
	$(GO) build -o bin/toolgate ./cmd/toolgate

# staticcheck 2026.2.2 (module v0.8.2), run from the Go module proxy (no install step).
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Needs Go alone: installs nothing. The tests that need PostgreSQL (the
# store's on PostgreSQL, the cluster and multi-node tests) start their own
# throwaway server (package pgtest) from Debian's postgresql package, and
# are skipped, saying so, where it is not installed; with
# TOOLGATE_TEST_POSTGRES=require (CI sets it, after `make postgres`) they
# fail instead.
test: vet
	$(GO) test -count=1 -timeout 15m ./...

# Installs Debian's postgresql with apt-get when it is missing: the
# server programs the PostgreSQL tests and the benchmarks start.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "postgres: installing postgresql with apt-get"; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql; }

# The packages whose goroutines share state (the store's writer, the engine,
# the stream hub, the SDK, the MCP endpoint, the MCP importer and the sandbox, whose tests
# take about 30 s under -race) under the race detector, which needs cgo: gcc is
# installed with apt-get (with the C library headers it links against) when
# missing. The store's PostgreSQL tests are skipped unless it is installed
# (make postgres).
race:
	@command -v gcc >/dev/null 2>&1 || { echo "race: installing gcc with apt-get"; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y gcc libc6-dev; }
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 30m ./store ./server ./handlers ./mobile ./agentloop ./mcpserve ./mcpimport ./sandbox ./cmd/toolgate

# Runs each fuzz target for a while: go test fuzzes one target of one
# package per invocation. Their committed corpora (testdata/fuzz/) also run
# as plain tests in `make test`. A new input that fails is written to the
# package's testdata/fuzz/; commit it with the fix. The first run builds
# the packages with coverage instrumentation (for ./server that includes
# SQLite: minutes), later runs take it from the build cache.
#
# The budgets are counts of executions (about 10 s each on a 2-core
# machine), not durations: with a duration, Go's fuzz coordinator (Go
# 1.26) can fail a target that found nothing with "context deadline
# exceeded" when the deadline races a busy worker (go.dev/issue/75804,
# fixed in Go 1.27); it did so once in CI here. FUZZTIME=<n>x or
# FUZZTIME=<duration> sets every target's budget at once.
FUZZ = $(GO) test -run '^$$' -fuzzminimizetime 1000x -fuzz
fuzz_for = -fuzztime $(or $(FUZZTIME),$(1))
.PHONY: fuzz
fuzz:
	$(FUZZ) '^FuzzDecodeRequest$$' $(call fuzz_for,30000x) ./handlers
	$(FUZZ) '^FuzzCursorParams$$' $(call fuzz_for,4000x) ./handlers
	$(FUZZ) '^FuzzValidateArgs$$' $(call fuzz_for,20000x) ./server
	$(FUZZ) '^FuzzCheckToolParameters$$' $(call fuzz_for,100000x) .
	$(FUZZ) '^FuzzCheckToolSpec$$' $(call fuzz_for,100000x) .
	$(FUZZ) '^FuzzCheckStrictJSON$$' $(call fuzz_for,100000x) .
	$(FUZZ) '^FuzzSSEStream$$' $(call fuzz_for,40000x) ./mobile
	$(FUZZ) '^FuzzRedact$$' $(call fuzz_for,60000x) ./outputsafety

# End-to-end tests of the browser SDK and page in Debian's Chromium, behind nginx.
e2e:
	bash web/e2e/run.sh

# Fails when gomobile cannot bind the mobile package.
mobile-check:
	bash mobile/check.sh

# Measures toolgate against an in-memory WebSocket gateway and a bare HTTP
# echo floor, in one run; writes bench/results.json and prints a table.
bench:
	$(GO) run ./cmd/toolgate-bench

# The chaos test: the real gateway killed with SIGKILL CHAOS_KILLS times
# (every 1-3 s) while Go SDK clients answer calls and callers make them;
# prints the figures RELIABILITY.md records. TOOLGATE_CHAOS_SEED=<n>
# replays a run's kill times. TestChaosRuns then kills it (at most 10
# times) during agent runs whose steps call a sandboxed tool and an
# imported MCP server's tool. Then the full-disk tests (a tmpfs: root),
# the second with an imported MCP server's calls in flight.
CHAOS_KILLS ?= 50
chaos:
	TOOLGATE_CHAOS_KILLS=$(CHAOS_KILLS) $(GO) test -count=1 -timeout 30m -run '^TestChaos(Runs)?$$' -v ./internal/chaos
	$(GO) test -count=1 -timeout 5m -run '^(TestFullDiskDuringMCPImportCalls|TestFullDiskRefusesWritesAndRecovers)$$' -v ./server

# The multi-node tests: three real toolgate serve processes on one
# throwaway PostgreSQL (package pgtest), a client on one node, a caller on
# another and the answer through the third; each node killed with SIGKILL
# in turn behind a round-robin proxy; one node's database connections cut;
# the sweep under a lease. They also run in `make test` (well under a minute).
multinode: postgres
	$(GO) test -count=1 -timeout 10m -v ./internal/multinode

# Lints the REST API's OpenAPI document (handlers/openapi.json, served at
# /openapi.json) with Redocly CLI's recommended rules: no error may remain
# (the rules turned off are in tools/openapi-lint/redocly.yaml, with why).
# The linter, pinned by tools/openapi-lint/package-lock.json, is installed
# with npm into tools/openapi-lint/node_modules, never globally; `make
# test` does not need it (its Go test holds the document to the router).
OPENAPI_LINT = tools/openapi-lint
openapi-lint:
	@command -v npm >/dev/null 2>&1 || { echo "openapi-lint: npm (Node.js 20.19 or later) is required" >&2; exit 1; }
	npm ci --prefix $(OPENAPI_LINT) --no-audit --no-fund --loglevel=error
	cd $(OPENAPI_LINT) && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		./node_modules/.bin/redocly lint --config redocly.yaml ../../handlers/openapi.json
