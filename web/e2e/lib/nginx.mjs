// Runs nginx as a reverse proxy in front of a gateway, from a template in
// ../nginx/ (buffering.conf.template: a proxy that holds streams back;
// idle-cutting.conf.template: one that cuts silent connections), on a free
// loopback port, with its pid, logs and temp files in a fresh temp dir.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const templates = join(dirname(fileURLToPath(import.meta.url)), "../nginx");

/** The nginx binary: $NGINX_BIN, or the Debian one. */
export function nginxBinary() {
  for (const candidate of [process.env.NGINX_BIN, "/usr/sbin/nginx", "/usr/bin/nginx"]) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  throw new Error("nginx is not installed (apt-get install -y nginx, or set NGINX_BIN)");
}

/** A loopback port nobody listens on right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
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

/**
 * Starts a buffering nginx proxying to `upstream` ("127.0.0.1:PORT").
 * @returns {Promise<{url: string, dir: string, stop: () => Promise<void>, errorLog: () => string}>}
 */
export function startBufferingProxy(upstream) {
  return startProxy("buffering.conf.template", upstream, {});
}

/**
 * Starts nginx proxying to `upstream` without buffering, cutting every
 * upstream connection silent for `readTimeout` (an nginx time, "3s"): a
 * stream whose heartbeat is longer is cut, a poll held longer is answered
 * 504. `finished()` lists the requests nginx has ended, as
 * {seconds, status, method, path}.
 * @returns {Promise<{url: string, dir: string, stop: () => Promise<void>, errorLog: () => string,
 *   finished: () => {seconds: number, status: number, method: string, path: string}[]}>}
 */
export async function startIdleCuttingProxy(upstream, { readTimeout = "3s" } = {}) {
  const proxy = await startProxy("idle-cutting.conf.template", upstream, { READ_TIMEOUT: readTimeout });
  proxy.finished = () => {
    let text = "";
    try {
      text = readFileSync(join(proxy.dir, "access.log"), "utf8");
    } catch {
      return [];
    }
    // $request_time $status "METHOD /path?query HTTP/1.1"
    return text
      .split("\n")
      .map((line) => /^(\S+) (\d+) "(\S+) ([^?" ]+)/.exec(line))
      .filter(Boolean)
      .map(([, seconds, status, method, path]) => ({ seconds: Number(seconds), status: Number(status), method, path }));
  };
  return proxy;
}

/**
 * Starts nginx from a template: a name in ../nginx/ or an absolute path,
 * with {{DIR}}, {{PORT}}, {{UPSTREAM}} and each of `vars` ({NAME: value}
 * fills {{NAME}}) filled in.
 * @returns {Promise<{url: string, dir: string, stop: () => Promise<void>, errorLog: () => string}>}
 */
export async function startProxy(templateName, upstream, vars) {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-nginx-"));
  const port = await freePort();
  let config = readFileSync(resolve(templates, templateName), "utf8")
    .replaceAll("{{DIR}}", dir)
    .replaceAll("{{PORT}}", String(port))
    .replaceAll("{{UPSTREAM}}", upstream);
  for (const [name, value] of Object.entries(vars)) config = config.replaceAll(`{{${name}}}`, value);
  const configPath = join(dir, "nginx.conf");
  writeFileSync(configPath, config);
  const output = [];
  const proc = spawn(nginxBinary(), ["-p", dir, "-c", configPath, "-e", join(dir, "error.log")], { stdio: ["ignore", "pipe", "pipe"] });
  proc.stdout.on("data", (d) => output.push(String(d)));
  proc.stderr.on("data", (d) => output.push(String(d)));
  const errorLog = () => {
    try {
      return readFileSync(join(dir, "error.log"), "utf8");
    } catch {
      return "";
    }
  };
  for (let i = 0; !(await canConnect(port)); i++) {
    if (proc.exitCode !== null || i > 100) {
      proc.kill("SIGKILL");
      throw new Error(`nginx did not start:\n${output.join("")}\n${errorLog()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    dir,
    errorLog,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGQUIT");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}
