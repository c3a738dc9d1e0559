// The proxy matrix: behind each of four real proxies from Debian, started
// here on loopback with their own config, 8 tabs of one headless Chromium
// profile with the gateway's page (the default page SDK: the tabs share one
// connection) and one Go SDK client (web/e2e/proxy/goclient, default
// settings) answer calls a caller makes every few seconds, to a random
// tab or to the Go client, for a soak of TOOLGATE_PROXY_SOAK_S seconds
// (120 by default) per proxy. A third of the gaps between calls are longer
// than the time the proxy lets a connection stay silent, so calls arrive
// after a cut.
//
//   squid            forward proxy (Chromium's --proxy-server, loopback not
//                    bypassed; the Go client's http proxy), read_timeout 10 s
//   nginx-buffering  reverse proxy, proxy_buffering on, gzip on
//                    text/event-stream, proxy_read_timeout 8s
//   nginx-ignoring   the same, also ignoring X-Accel-Buffering (it really
//                    holds streams back)
//   haproxy          reverse proxy, timeout client/server 5s
//
// During the soak behind TOOLGATE_PROXY_KILL (haproxy by default; "none"
// for no kill) the gateway is killed with SIGKILL, with a call just made to
// every client, and started again on the same port and database: each of
// those calls must still be answered, and the time until every client
// answers a new call is recorded.
//
// Asserted: every call is answered, the slowest (outside the restart) within
// TOOLGATE_PROXY_MAX_MS (10 s: a generous bound; the figures that count are
// in RELIABILITY.md), the clients back within 15 s of the restart, and the
// traffic really went through the proxy. Written: test-artifacts/
// proxy-matrix.json (p50/p99/max per proxy, every call, the cuts the proxy
// logged) and a table on standard output. TOOLGATE_PROXY_MATRIX picks
// proxies (comma-separated names); TOOLGATE_PROXY_SEED fixes the schedule.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { startGateway } from "../lib/gateway.mjs";
import { freePort } from "../lib/nginx.mjs";
import { launchBrowser, watchConsole, artifactsDir } from "../lib/browser.mjs";
import { startSquid, startBufferingNginx, startHaproxy, isEventPath } from "../lib/proxies.mjs";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const soakMs = Number(process.env.TOOLGATE_PROXY_SOAK_S ?? 120) * 1000;
const maxBoundMs = Number(process.env.TOOLGATE_PROXY_MAX_MS ?? 10000);
const backBoundMs = 15000;
const killDuring = process.env.TOOLGATE_PROXY_KILL ?? "haproxy";
const seed = Number(process.env.TOOLGATE_PROXY_SEED ?? Date.now() % 1e9);
const TABS = 8;

const matrix = [
  {
    name: "squid",
    setting: "squid forward proxy, read_timeout 10 seconds",
    start: () => startSquid({ readTimeoutS: 10 }),
  },
  {
    name: "nginx-buffering",
    setting: "nginx: proxy_buffering on, gzip on text/event-stream, proxy_read_timeout 8s",
    start: (gw) => startBufferingNginx(gw.hostPort, { readTimeoutS: 8 }),
  },
  {
    name: "nginx-ignoring",
    setting: "the same nginx, also proxy_ignore_headers X-Accel-Buffering",
    start: (gw) => startBufferingNginx(gw.hostPort, { readTimeoutS: 8, ignoreAccel: true }),
  },
  {
    name: "haproxy",
    setting: "HAProxy: timeout client 5s, timeout server 5s",
    start: (gw) => startHaproxy(gw.hostPort, { idleS: 5 }),
  },
];
const chosen = (process.env.TOOLGATE_PROXY_MATRIX ?? matrix.map((p) => p.name).join(",")).split(",").map((s) => s.trim());
for (const name of chosen) {
  if (!matrix.some((p) => p.name === name)) throw new Error(`TOOLGATE_PROXY_MATRIX: no proxy "${name}" (${matrix.map((p) => p.name)})`);
}

/** A small seeded generator (mulberry32), so a schedule can be repeated. */
function random(seedValue) {
  let a = seedValue >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The value at quantile q of sorted numbers (nearest rank). */
function quantile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

// --- the Go SDK client ---------------------------------------------------------

let goBinary = process.env.TOOLGATE_GOCLIENT_BIN ?? null;

/** The Go client's binary: $TOOLGATE_GOCLIENT_BIN, or built once from this checkout. */
function goClientBinary() {
  if (goBinary) {
    if (!existsSync(goBinary)) throw new Error(`TOOLGATE_GOCLIENT_BIN=${goBinary} does not exist`);
    return goBinary;
  }
  goBinary = join(mkdtempSync(join(tmpdir(), "toolgate-goclient-")), "goclient");
  execFileSync("go", ["build", "-o", goBinary, "./web/e2e/proxy/goclient"], { cwd: repoRoot, stdio: "inherit" });
  return goBinary;
}

/** Starts the Go client against `gateway` (through the forward proxy `proxy`, if given); resolves once it has a session. */
async function startGoClient(gateway, proxy) {
  const args = ["-gateway", gateway, ...(proxy ? ["-proxy", proxy] : [])];
  const proc = spawn(goClientBinary(), args, { stdio: ["pipe", "pipe", "pipe"] });
  const lines = [];
  const stderr = [];
  proc.stderr.on("data", (d) => stderr.push(String(d)));
  const sessionId = await new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`the Go client did not connect in 30 s:\n${stderr.join("")}`)), 30000);
    createInterface({ input: proc.stdout }).on("line", (line) => {
      let v;
      try {
        v = JSON.parse(line);
      } catch {
        return;
      }
      lines.push(v);
      if (v.session_id) {
        clearTimeout(timer);
        resolvePromise(v.session_id);
      }
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the Go client exited (${code}):\n${stderr.join("")}`));
    });
  });
  return {
    sessionId,
    lines,
    stderr: () => stderr.join(""),
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.stdin.end();
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// --- tabs ----------------------------------------------------------------------------

/** Opens `count` tabs of `url` in `context`, the first alone (it leads), and waits until each is connected. */
async function openTabs(context, url, count) {
  const open = async () => {
    const page = await context.newPage();
    const watch = watchConsole(page);
    await page.goto(url);
    return { page, watch };
  };
  const tabs = [await open()];
  await connected(tabs[0]);
  while (tabs.length < count) tabs.push(...(await Promise.all(Array.from({ length: Math.min(4, count - tabs.length) }, open))));
  await Promise.all(tabs.map(connected));
  return tabs;
}

async function connected(tab) {
  await tab.page.waitForSelector(`[data-testid="conn-state"][data-state="connected"]`, { timeout: 30000 });
  tab.sessionId = await tab.page.evaluate(() => globalThis.toolgateClient.sessionId);
}

/** What a tab says of its connection now: the transport the page shows, and the SDK's client.connection where it has one. */
function tabState(tab) {
  return tab.page
    .evaluate(() => {
      const c = globalThis.toolgateClient;
      const info = c.connection === undefined ? null : JSON.parse(JSON.stringify(c.connection));
      return { transport: document.querySelector('[data-testid="transport"]')?.dataset.transport ?? null, connection: info };
    })
    .catch((err) => ({ error: err.message }));
}

// --- calls -------------------------------------------------------------------------

const FINAL = new Set(["completed", "failed", "timed_out", "cancelled", "denied"]);

/**
 * Makes a call and follows it to its end: POST /v1/calls without waiting,
 * then GET /v1/calls/{id}?wait_ms= until it is final (followCall).
 * Resolves with {target, at, ms, status, attempts}; `ms` is from the POST
 * to the answer.
 */
async function makeCall(gw, target, startedAt, timeoutMs = 60000) {
  return followCall(gw, await postCall(gw, target, startedAt, timeoutMs), timeoutMs);
}

/** POST /v1/calls without waiting; resolves once the call is stored. */
async function postCall(gw, target, startedAt, timeoutMs = 60000) {
  const t0 = performance.now();
  const entry = { target: target.label, at: Math.round(Date.now() - startedAt), ms: null, status: null, attempts: null };
  const created = await gw.call(target.sessionId, target.tool, {}, { wait: false, timeout_ms: timeoutMs });
  return { t0, entry, created, startedAt };
}

/** Follows a stored call to its end, asking again after a connection error (the gateway restarting). */
async function followCall(gw, { t0, entry, created, startedAt }, timeoutMs = 60000) {
  entry.id = created.id;
  const end = Date.now() + timeoutMs + 15000;
  let record = created;
  while (!FINAL.has(record.status) && Date.now() < end) {
    try {
      const { status, body } = await gw.api(`/v1/calls/${created.id}?wait_ms=10000`);
      if (status === 200) record = body;
      else await sleep(100);
    } catch {
      await sleep(100);
    }
  }
  entry.ms = Math.round(performance.now() - t0);
  entry.status = record.status;
  entry.attempts = record.attempts;
  entry.endedAt = Math.round(Date.now() - startedAt);
  return entry;
}

// --- one proxy -------------------------------------------------------------------

const results = {};

/**
 * What the proxy logged of the event connections (streams and polls) of
 * the browser or of the Go client (`go`): how many of each kind, how many
 * it cut, and the gaps when the clients had none open (the times between
 * one connection's end and the next one's start, in order).
 */
function proxyTraffic(finished, go) {
  const events = finished.filter((f) => isEventPath(f.path) && /^Go-http-client/.test(f.agent) === go).sort((a, b) => a.start - b.start);
  const byPath = {};
  for (const f of events) {
    const key = f.path.startsWith("/v1/sessions/") ? `/v1/sessions/*/${f.path.split("/").at(-1)}` : f.path;
    byPath[key] = (byPath[key] ?? 0) + 1;
  }
  const gaps = [];
  let coveredTo = null;
  for (const f of events) {
    if (coveredTo !== null && f.start > coveredTo) gaps.push(f.start - coveredTo);
    coveredTo = Math.max(coveredTo ?? f.end, f.end);
  }
  const held = events.map((f) => f.ms).sort((a, b) => a - b);
  return {
    connections: events.length,
    by_path: byPath,
    cuts: events.filter((f) => f.cut).length,
    held_p50_ms: quantile(held, 0.5),
    gaps_over_100ms: gaps.filter((g) => g > 100),
    max_gap_ms: gaps.length ? Math.max(...gaps) : 0,
  };
}

/**
 * What the gateway says of each session's connection (GET /v1/sessions/{sid}:
 * `connection`), when it says it: its transport, heartbeat and cuts.
 */
async function gatewayConnections(gw, targets) {
  const seen = {};
  for (const t of targets) {
    const { status, body } = await gw.api(`/v1/sessions/${t.sessionId}`).catch(() => ({ status: 0 }));
    if (status === 200 && body?.connection) seen[t.label] = body.connection;
  }
  return Object.keys(seen).length ? seen : null;
}

async function soak(spec) {
  const rnd = random(seed + spec.name.length * 7919);
  const port = await freePort();
  const gw = await startGateway({ args: ["--addr", `127.0.0.1:${port}`] });
  const cleanup = [];
  const result = { proxy: spec.name, setting: spec.setting, seed, soak_s: soakMs / 1000 };
  results[spec.name] = result;
  try {
    const proxy = await spec.start(gw);
    cleanup.push(() => proxy.stop());
    result.cut_ms = proxy.cutMs;
    const forward = proxy.kind === "forward";
    // Chromium bypasses a proxy for loopback unless told not to (<-loopback>).
    const browser = await launchBrowser(forward ? [`--proxy-server=${proxy.url}`, "--proxy-bypass-list=<-loopback>"] : []);
    cleanup.push(() => browser.close());
    const context = await browser.newContext({ viewport: { width: 800, height: 600 } });
    const pageUrl = forward ? `${gw.url}/` : `${proxy.url}/`;

    const opening = Date.now();
    const tabs = await openTabs(context, pageUrl, TABS);
    const go = await startGoClient(forward ? gw.url : proxy.url, forward ? proxy.url : null);
    cleanup.unshift(() => go.stop());
    result.connected_ms = Date.now() - opening;
    result.transports_at_start = (await Promise.all(tabs.map(tabState))).map((s) => s.transport);

    const targets = [
      ...tabs.map((t, i) => ({ label: `tab${i}`, sessionId: t.sessionId, tool: "page_info" })),
      { label: "go", sessionId: go.sessionId, tool: "go_echo" },
    ];
    assert.equal(new Set(targets.map((t) => t.sessionId)).size, TABS + 1, "a session per tab and one for the Go client");

    // Everyone answers once before the soak starts.
    const startedAt = Date.now();
    const warm = await Promise.all(targets.map((t) => makeCall(gw, t, startedAt)));
    assert.deepEqual(warm.filter((c) => c.status !== "completed"), [], "every client answers before the soak");

    // The soak.
    const calls = [];
    const pending = [];
    const fire = (target) => {
      const p = makeCall(gw, target, startedAt).then(
        (c) => calls.push(c),
        (err) => calls.push({ target: target.label, status: `error: ${err.message}`, ms: null }),
      );
      pending.push(p);
    };
    const kill = killDuring === spec.name;
    let restart = null;
    const soakStart = Date.now();
    while (Date.now() - soakStart < soakMs) {
      // A third of the gaps outlast the proxy's cut (squid's timer adds up
      // to 1.5 s to its read_timeout): the clients' connections go idle and
      // are cut, and the next call comes as they reconnect, or after.
      const gap = rnd() < 0.35 ? proxy.cutMs + 1500 + rnd() * 4000 : 300 + rnd() * 2700;
      await sleep(gap);
      if (kill && !restart && Date.now() - soakStart > soakMs / 2) {
        restart = await killAndRestart(gw, targets, startedAt);
        continue;
      }
      const burst = rnd() < 0.2 ? 2 + Math.floor(rnd() * 2) : 1;
      const picked = new Set();
      while (picked.size < burst) picked.add(rnd() < 0.15 ? targets.at(-1) : targets[Math.floor(rnd() * TABS)]);
      for (const t of picked) fire(t);
    }
    await Promise.all(pending);

    // What was learned; then the clients leave, so that the proxy logs
    // their last connections too, and what it saw is read.
    result.transports_at_end = (await Promise.all(tabs.map(tabState))).map((s) => s.transport);
    result.connection_at_end = (await tabState(tabs[0])).connection;
    result.gateway_connection = await gatewayConnections(gw, targets);
    if (result.gateway_connection) {
      // The tabs' sessions share one connection: each counts its cuts.
      const tabCuts = Object.entries(result.gateway_connection).filter(([label]) => label !== "go").map(([, c]) => c.cuts ?? 0);
      result.cuts_seen_by_gateway = { tabs: Math.max(0, ...tabCuts), go: result.gateway_connection.go?.cuts ?? null };
    }
    result.console_errors = tabs.reduce((n, t) => n + t.watch.problems.length, 0);
    result.console_error_sample = [...new Set(tabs.flatMap((t) => t.watch.problems))].slice(0, 5);
    const uncaught = tabs.flatMap((t) => t.watch.problems.filter((p) => p.startsWith("uncaught")));
    await context.close();
    await go.stop();
    result.go_reconnects = go.lines.filter((l) => l.state === "reconnecting").length;
    await sleep(500);
    const finished = proxy.finished();
    result.proxy_requests = finished.length;
    result.browser_connections = proxyTraffic(finished, false);
    result.go_connections = proxyTraffic(finished, true);
    result.cuts_logged_by_proxy = result.browser_connections.cuts + result.go_connections.cuts;

    // The figures: calls across the restart are reported with it, not here.
    const across = (c) => restart && c.at <= restart.restartedAtMs && c.endedAt >= restart.killedAtMs;
    const counted = calls.filter((c) => !across(c));
    const ms = counted.filter((c) => c.status === "completed").map((c) => c.ms).sort((a, b) => a - b);
    Object.assign(result, {
      calls: calls.length,
      answered: calls.filter((c) => c.status === "completed").length,
      p50_ms: quantile(ms, 0.5),
      p99_ms: quantile(ms, 0.99),
      max_ms: ms.at(-1) ?? null,
      over_1s: ms.filter((v) => v > 1000).length,
      go_calls: counted.filter((c) => c.target === "go").length,
      go_max_ms: Math.max(0, ...counted.filter((c) => c.target === "go" && c.ms !== null).map((c) => c.ms)),
      restart,
      slowest: [...counted].sort((a, b) => (b.ms ?? 1e9) - (a.ms ?? 1e9)).slice(0, 5),
      every_call: calls.sort((a, b) => a.at - b.at),
    });
    console.log(
      `${spec.name}: ${result.calls} calls, p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms, max ${result.max_ms} ms, ` +
        `cuts ${result.cuts_logged_by_proxy}, longest time the tabs had no connection ${result.browser_connections.max_gap_ms} ms, ` +
        `transports ${[...new Set(result.transports_at_end)]}` +
        (restart ? `, restart: back in ${restart.back_ms} ms` : ""),
    );

    // Through the proxy, really.
    assert.ok(result.browser_connections.connections > 0, `the browser's connections went through the proxy:\n${proxy.log().slice(-2000)}`);
    assert.ok(result.go_connections.connections > 0, `the Go client's connections went through the proxy:\n${proxy.log().slice(-2000)}`);
    // Every call answered, none lost to the restart, within the bounds.
    assert.ok(calls.length >= soakMs / 10000, `the soak made calls (${calls.length})`);
    assert.deepEqual(calls.filter((c) => c.status !== "completed"), [], "every call was answered");
    if (restart) {
      assert.deepEqual(restart.in_flight.filter((c) => c.status !== "completed"), [], "no call made just before the kill was lost");
      assert.ok(restart.back_ms <= backBoundMs, `every client answered within ${backBoundMs} ms of the restart (${restart.back_ms} ms)`);
    }
    assert.ok(result.max_ms <= maxBoundMs, `the slowest call took ${result.max_ms} ms (bound ${maxBoundMs} ms): ${JSON.stringify(result.slowest)}`);
    assert.deepEqual(uncaught, [], "no uncaught error in any tab");
  } catch (err) {
    result.error = err.message;
    result.gateway_log = gw.log.split("\n").slice(-40);
    throw err;
  } finally {
    for (const step of cleanup) await step().catch(() => {});
    await gw.stop();
  }
}

/**
 * Makes a call to every client (without waiting), kills the gateway with
 * SIGKILL once they are stored, starts it again on the same port and
 * database, and calls every client again. Returns the calls made before the
 * kill (each followed to its end) and how long after the restart the last
 * client answered.
 */
async function killAndRestart(gw, targets, startedAt) {
  // Killed once each call is stored (its POST answered), answered or not.
  const posted = await Promise.all(targets.map((t) => postCall(gw, t, startedAt)));
  const inFlight = posted.map((p) => followCall(gw, p));
  const killedAt = Date.now();
  const exited = new Promise((r) => gw.proc.once("exit", r));
  gw.proc.kill("SIGKILL");
  await exited;
  await gw.start();
  const restartedAt = Date.now();
  const back = await Promise.all(targets.map((t) => makeCall(gw, t, startedAt, 60000)));
  const inFlightDone = await Promise.all(inFlight);
  return {
    killedAtMs: killedAt - startedAt,
    restartedAtMs: restartedAt - startedAt,
    down_ms: restartedAt - killedAt,
    back_ms: Math.max(...back.map((c) => c.ms)),
    back_per_client: Object.fromEntries(back.map((c) => [c.target, c.ms])),
    back_statuses: back.map((c) => c.status),
    in_flight: inFlightDone.map(({ target, status, attempts, ms }) => ({ target, status, attempts, ms })),
  };
}

for (const spec of matrix.filter((p) => chosen.includes(p.name))) {
  test(`behind ${spec.name} (${spec.setting}): 8 tabs and a Go client answer every call of a ${soakMs / 1000} s soak`, { timeout: soakMs + 240000 }, () => soak(spec));
}

after(() => {
  if (Object.keys(results).length === 0) return;
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, "proxy-matrix.json");
  writeFileSync(path, JSON.stringify({ seed, soak_s: soakMs / 1000, at: new Date().toISOString(), proxies: results }, null, 2));
  const rows = Object.values(results).map((r) =>
    [
      r.proxy,
      r.calls,
      r.answered,
      r.p50_ms,
      r.p99_ms,
      r.max_ms,
      r.go_max_ms,
      r.cuts_logged_by_proxy,
      r.browser_connections?.max_gap_ms,
      r.connection_at_end?.heartbeat_ms ?? "",
      [...new Set(r.transports_at_end ?? [])].join("/"),
      r.restart ? r.restart.back_ms : "",
      r.error ? "FAILED" : "ok",
    ].join(" | "),
  );
  const head = "proxy | calls | answered | p50 ms | p99 ms | max ms | Go max ms | cuts | tabs' longest gap ms | tabs' heartbeat ms | transport | back after kill -9 ms | result";
  console.log([head, ...rows].join("\n"));
  console.log(`written to ${path}`);
});
