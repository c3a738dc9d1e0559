// The proxies of the proxy matrix (proxy/matrix.test.mjs), each a real
// Debian program run on a free loopback port with its own config in a temp
// dir: squid as a forward proxy, nginx buffering and compressing, HAProxy
// cutting idle connections. Each is returned as a Proxy: where clients
// reach it, how long it lets a connection stay silent, and the event
// connections (streams and polls) it ended, read from its own log.

import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startProxy } from "./nginx.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/**
 * A request the proxy finished: when it started and ended (ms since the
 * epoch), its status, path and user agent, and whether the proxy cut it at
 * its timeout.
 * @typedef {{start: number, end: number, ms: number, status: number, path: string, agent: string, cut: boolean}} Finished
 * @typedef {{
 *   name: string,
 *   kind: "forward" | "reverse",
 *   url: string,
 *   cutMs: number,
 *   finished: () => Finished[],
 *   log: () => string,
 *   stop: () => Promise<void>,
 * }} Proxy
 */

/** The first of `candidates` that exists, or an error naming the package to install. */
function binary(envName, candidates, pkg) {
  for (const candidate of [process.env[envName], ...candidates]) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  throw new Error(`${pkg} is not installed (apt-get install -y ${pkg}, or set ${envName})`);
}

/** True for the requests that hold a connection for events: streams and polls. */
export function isEventPath(path) {
  return path === "/v1/streams" || path === "/v1/poll" || /^\/v1\/sessions\/[^/]+\/(events|poll)$/.test(path);
}

function fill(template, vars) {
  let text = readFileSync(template, "utf8");
  for (const [name, value] of Object.entries(vars)) text = text.replaceAll(`{{${name}}}`, String(value));
  return text;
}

function canConnect(port) {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Runs `bin args`, keeps its output, and waits until it accepts connections on `port`. */
async function run(name, bin, args, port, extraLog = () => "") {
  const output = [];
  const proc = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  const keep = (d) => {
    output.push(String(d));
    if (output.length > 20000) output.splice(0, 10000);
  };
  proc.stdout.on("data", keep);
  proc.stderr.on("data", keep);
  for (let i = 0; !(await canConnect(port)); i++) {
    if (proc.exitCode !== null || i > 200) {
      proc.kill("SIGKILL");
      throw new Error(`${name} did not start:\n${output.join("")}\n${extraLog()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    proc,
    output: () => output.join(""),
    async stop(signal = "SIGTERM") {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function readOr(path, fallback = "") {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return fallback;
  }
}

/**
 * squid as a forward proxy cutting server connections silent for
 * `readTimeoutS` seconds (read_timeout). Clients are told to use `url` as
 * their HTTP proxy.
 * @returns {Promise<Proxy>}
 */
export async function startSquid({ readTimeoutS = 10 } = {}) {
  const bin = binary("SQUID_BIN", ["/usr/sbin/squid"], "squid");
  // Run as root, squid drops to its own user ("proxy"), which must be able
  // to reach and write its directory: a private TMPDIR would not do.
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(root ? "/tmp" : tmpdir(), "toolgate-squid-"));
  if (root) chmodSync(dir, 0o777);
  const port = await freePort();
  const config = join(dir, "squid.conf");
  writeFileSync(config, fill(join(here, "../proxy/squid.conf.template"), { DIR: dir, PORT: port, READ_TIMEOUT: `${readTimeoutS} seconds` }));
  const cacheLog = join(dir, "cache.log");
  const proc = await run("squid", bin, ["-N", "-f", config], port, () => readOr(cacheLog));
  return {
    name: "squid",
    kind: "forward",
    url: `http://127.0.0.1:${port}`,
    cutMs: readTimeoutS * 1000,
    dir,
    finished() {
      // %ts.%03tu %tr %>Hs %Ss %err_code %rm %ru "%{User-Agent}>h"
      return readOr(join(dir, "access.log"))
        .split("\n")
        .map((line) => /^(\S+) (\d+) (\d+) (\S+) (\S+) (\S+) (\S+) "(.*)"$/.exec(line))
        .filter(Boolean)
        .map(([, at, ms, status, , err, , url, agent]) => {
          let path = url;
          try {
            path = new URL(url).pathname;
          } catch {
            // "error:transaction-end-before-headers" and the like
          }
          const end = Math.round(Number(at) * 1000);
          return { start: end - Number(ms), end, ms: Number(ms), status: Number(status), path, agent, cut: isEventPath(path) && err === "ERR_READ_TIMEOUT" };
        });
    },
    log: () => `${proc.output()}\n${readOr(cacheLog)}`,
    async stop() {
      await proc.stop("SIGTERM");
      if (root) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * nginx as a reverse proxy that buffers responses, compresses event
 * streams and cuts upstream connections silent for `readTimeoutS`
 * (proxy_read_timeout); with `ignoreAccel` it also ignores
 * X-Accel-Buffering, so it holds streams back.
 * @returns {Promise<Proxy>}
 */
export async function startBufferingNginx(upstream, { readTimeoutS = 8, ignoreAccel = false } = {}) {
  const proxy = await startProxy("buffering-timeout.conf.template", upstream, {
    READ_TIMEOUT: `${readTimeoutS}s`,
    EXTRA: ignoreAccel ? "proxy_ignore_headers X-Accel-Buffering;" : "",
  });
  return {
    name: ignoreAccel ? "nginx-ignoring" : "nginx-buffering",
    kind: "reverse",
    url: proxy.url,
    cutMs: readTimeoutS * 1000,
    dir: proxy.dir,
    finished() {
      // $msec $request_time $status $connection "METHOD /path?query
      // HTTP/1.1" "agent"; error.log names the connection of each request
      // cut by proxy_read_timeout ("*12 upstream timed out"): a poll
      // answered 504, or a stream ended after its headers (which ends the
      // connection too).
      const timedOut = new Set([...proxy.errorLog().matchAll(/\*(\d+) upstream timed out/g)].map((m) => m[1]));
      return readOr(join(proxy.dir, "access.log"))
        .split("\n")
        .map((line) => /^(\S+) (\S+) (\d+) (\d+) "(\S+) ([^?" ]+)[^"]*" "(.*)"$/.exec(line))
        .filter(Boolean)
        .map(([, at, seconds, status, connection, , path, agent]) => {
          const ms = Math.round(Number(seconds) * 1000);
          const end = Math.round(Number(at) * 1000);
          const cut = isEventPath(path) && timedOut.has(connection) && (status === "504" || /(streams|events)$/.test(path));
          return { start: end - ms, end, ms, status: Number(status), path, agent, cut };
        });
    },
    log: () => proxy.errorLog(),
    stop: () => proxy.stop(),
  };
}

/**
 * HAProxy as a reverse proxy cutting connections idle for `idleS` seconds on
 * either side (timeout client / timeout server).
 * @returns {Promise<Proxy>}
 */
export async function startHaproxy(upstream, { idleS = 5 } = {}) {
  const bin = binary("HAPROXY_BIN", ["/usr/sbin/haproxy"], "haproxy");
  const dir = mkdtempSync(join(tmpdir(), "toolgate-haproxy-"));
  const port = await freePort();
  const config = join(dir, "haproxy.cfg");
  writeFileSync(config, fill(join(here, "../proxy/haproxy.cfg.template"), { PORT: port, UPSTREAM: upstream, IDLE: `${idleS}s` }));
  const proc = await run("haproxy", bin, ["-db", "-f", config], port);
  return {
    name: "haproxy",
    kind: "reverse",
    url: `http://127.0.0.1:${port}`,
    cutMs: idleS * 1000,
    dir,
    finished() {
      // %Ta %ST %tsc %Ts.%ms "%r" "{agent}"; a termination state of "cD"
      // or "sD" is a client- or server-side timeout while the body flowed,
      // "sH" one before the reply's headers (a held poll, answered 504).
      return proc
        .output()
        .split("\n")
        .map((line) => /^(-?\d+) (-?\d+) (\S+) (\d+)\.(\d+) "(\S+) ([^?" ]+)[^"]*" "\{(.*)\}"$/.exec(line))
        .filter(Boolean)
        .map(([, ms, status, state, secs, millis, , path, agent]) => {
          const start = Number(secs) * 1000 + Number(millis);
          return { start, end: start + Number(ms), ms: Number(ms), status: Number(status), path, agent, cut: isEventPath(path) && /^[cs][DH]/.test(state) };
        });
    },
    log: () => proc.output(),
    stop: () => proc.stop("SIGTERM"),
  };
}
