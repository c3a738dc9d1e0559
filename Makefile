# toolgate — the commands a developer and CI use. `make run` serves the
# gateway with its embedded defaults; `make test` runs the test suite.
GO ?= go

.PHONY: run build test vet race e2e mobile-check bench chaos

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

test: vet
	$(GO) test -count=1 -timeout 15m ./...

# The packages whose goroutines share state (the store's writer, the engine,
# the stream hub, the SDK) under the race detector, which needs cgo: gcc is
# installed with apt-get (with the C library headers it links against) when
# missing.
SUDO = $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
race:
	@command -v gcc >/dev/null 2>&1 || { echo "race: installing gcc with apt-get"; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y gcc libc6-dev; }
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 30m ./store ./server ./handlers ./mobile ./agentloop ./cmd/toolgate

# Runs each fuzz target for FUZZTIME: go test fuzzes one target of one
# package per invocation. Their committed corpora (testdata/fuzz/) also run
# as plain tests in `make test`. A new input that fails is written to the
# package's testdata/fuzz/; commit it with the fix. The first run builds
# the packages with coverage instrumentation (for ./server that includes
# SQLite: minutes), later runs take it from the build cache.
FUZZTIME ?= 10s
FUZZ = $(GO) test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s -fuzz
.PHONY: fuzz
fuzz:
	$(FUZZ) '^FuzzDecodeRequest$$' ./handlers
	$(FUZZ) '^FuzzCursorParams$$' ./handlers
	$(FUZZ) '^FuzzValidateArgs$$' ./server
	$(FUZZ) '^FuzzCheckToolParameters$$' .
	$(FUZZ) '^FuzzCheckToolSpec$$' .
	$(FUZZ) '^FuzzCheckStrictJSON$$' .
	$(FUZZ) '^FuzzSSEStream$$' ./mobile

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
# replays a run's kill times.
CHAOS_KILLS ?= 50
chaos:
	TOOLGATE_CHAOS_KILLS=$(CHAOS_KILLS) $(GO) test -count=1 -timeout 30m -run '^TestChaos$$' -v ./internal/chaos
