# toolgate — the commands a developer and CI use. `make run` serves the
# gateway with its embedded defaults; `make test` runs the test suite.
GO ?= go

.PHONY: run build test vet e2e mobile-check bench

run:
	$(GO) run ./cmd/toolgate serve

build:
	$(GO) build -o bin/toolgate ./cmd/toolgate

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

test: vet
	$(GO) test -count=1 -timeout 15m ./...

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
