#!/usr/bin/env bash
# `make e2e`: a type check of the browser SDK's declarations (toolgate.d.ts,
# with tsc --strict against types/usage.ts), the SDK's Node tests and the
# page's end-to-end tests in headless Debian Chromium, directly and behind a
# buffering nginx, and the proxy matrix (8 tabs and a Go client behind squid,
# nginx and HAProxy), against a gateway built from this checkout. Installs
# what it needs on a fresh Debian machine (chromium, nginx, squid and haproxy
# from apt,
# playwright-core and typescript from the committed lock file), keeps
# screenshots in test-artifacts/, and exits non-zero when anything fails.
set -euo pipefail

cd "$(dirname "$0")/../.."
root="$(pwd)"
artifacts="$root/test-artifacts"

say() { printf '\n== %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# --- system packages ---------------------------------------------------------
missing=()
[ -x "${CHROMIUM_BIN:-/usr/bin/chromium}" ] || missing+=(chromium)
if [ -z "${NGINX_BIN:-}" ] && ! [ -x /usr/sbin/nginx ] && ! command -v nginx >/dev/null 2>&1; then
  missing+=(nginx)
fi
[ -x "${SQUID_BIN:-/usr/sbin/squid}" ] || missing+=(squid)
[ -x "${HAPROXY_BIN:-/usr/sbin/haproxy}" ] || missing+=(haproxy)
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]} with apt-get"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi

command -v node >/dev/null 2>&1 || { echo "run.sh: node (>= 20) is required" >&2; exit 1; }
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "run.sh: node >= 20 is required (found $(node --version))" >&2
  exit 1
fi

# --- npm packages (playwright-core, which downloads no browser; typescript) ---
say "npm ci in web/e2e"
(cd web/e2e && npm ci --no-audit --no-fund --loglevel=error)

# --- the SDK's type declarations ---------------------------------------------
say "type-checking web/static/toolgate.d.ts (tsc --strict)"
(cd web/e2e && ./node_modules/.bin/tsc -p types --strict --noEmit)

# --- the gateway ---------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-e2e.XXXXXX")"
trap 'rm -rf "$work"' EXIT
say "building the gateway"
go build -o "$work/toolgate" ./cmd/toolgate

# --- the tests -----------------------------------------------------------------
mkdir -p "$artifacts"
rm -f "$artifacts"/page-*.png
say "SDK tests (node --test) and browser tests (Chromium, nginx)"
cd web/e2e
TOOLGATE_BIN="$work/toolgate" TOOLGATE_ARTIFACTS="$artifacts" TMPDIR="$work" \
  node --test --test-concurrency=1 --test-timeout=120000 sdk/ browser/

# --- MCP (web/e2e/mcp, docs/MCP-CONFORMANCE.md) --------------------------------
# The official conformance suite against /mcp/sessions/{sid} at 2025-11-25 and
# 2026-07-28, through an nginx that adds the agent key, judged against the
# expected-failures baselines in mcp/ (the suite runs on the Node 22 from the
# lock file); and the TypeScript SDK's client calling a tool a page in
# Chromium registered. Results are kept in test-artifacts/mcp-conformance/.
say "MCP: the conformance suite (both revisions) and a TypeScript SDK host calling a page's tool"
TOOLGATE_BIN="$work/toolgate" TOOLGATE_ARTIFACTS="$artifacts" TMPDIR="$work" \
  node --test --test-concurrency=1 --test-timeout=300000 mcp/

# The Go SDK behind nginx cutting idle connections (mobile/proxy_test.go
# skips without NGINX_BIN, so `make test` needs no nginx).
say "Go SDK behind an idle-cutting nginx"
nginx_bin="${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}"
(cd "$root" && NGINX_BIN="$nginx_bin" go test -count=1 -run '^TestBehindIdleCuttingProxy$' ./mobile)

# Importing an MCP server: the official reference server
# (@modelcontextprotocol/server-everything, from node_modules) over stdio,
# through the gateway and its agent loop (server/mcpimport_*_test.go skip
# without TOOLGATE_MCP_EVERYTHING, so `make test` needs no Node packages).
say "importing @modelcontextprotocol/server-everything over stdio"
(cd "$root" && TOOLGATE_MCP_EVERYTHING="$root/web/e2e/node_modules/.bin/mcp-server-everything" \
  go test -count=1 -run '^TestMCPImport.*Everything$' -v ./server)

# The proxy matrix (web/e2e/proxy/matrix.test.mjs): behind squid (forward),
# two buffering nginx and an idle-cutting HAProxy, each started here, 8 tabs
# of one Chromium profile and a Go SDK client answer a call every few seconds
# for TOOLGATE_PROXY_SOAK_S (120) seconds per proxy, the gateway killed with
# SIGKILL once; figures in test-artifacts/proxy-matrix.json (RELIABILITY.md).
# node applies --test-timeout to the whole file too: four soaks and their set-ups.
say "the proxy matrix: 8 tabs and a Go client behind squid, nginx and HAProxy"
(cd "$root" && go build -o "$work/goclient" ./web/e2e/proxy/goclient)
TOOLGATE_BIN="$work/toolgate" TOOLGATE_GOCLIENT_BIN="$work/goclient" TOOLGATE_ARTIFACTS="$artifacts" TMPDIR="$work" \
  node --test --test-concurrency=1 --test-timeout=$(( (${TOOLGATE_PROXY_SOAK_S:-120} + 150) * 4 * 1000 )) proxy/

for shot in page-with-console page-behind-buffering-nginx page-phone; do
  if ! [ -s "$artifacts/$shot.png" ]; then
    echo "run.sh: the screenshot $artifacts/$shot.png was not written" >&2
    exit 1
  fi
done
say "screenshots kept in $artifacts"
