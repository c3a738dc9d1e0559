// README.md's page example ("A page offers a tool"), as it stands but for the
// gateway's address, served from another origin than the gateway's, which
// allows it with --allowed-origins: the SDK loads from the gateway, registers
// its tool over CORS and answers a call on the stream.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { startGateway } from "../lib/gateway.mjs";
import { freePort } from "../lib/nginx.mjs";
import { launchBrowser, watchConsole } from "../lib/browser.mjs";
import { until } from "../lib/wait.mjs";

// readmePageBlock returns the html block below README.md's comment naming this file.
function readmePageBlock() {
  const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  const marker = readme.indexOf("<!-- test: web/e2e/browser/cross-origin.test.mjs");
  assert.ok(marker >= 0, "README.md has no block marked for cross-origin.test.mjs");
  const open = readme.indexOf("```html\n", marker);
  const close = readme.indexOf("\n```\n", open);
  assert.ok(open >= 0 && close > open, "README.md's marked page block is not a fenced html block");
  return readme.slice(open + "```html\n".length, close);
}
const block = readmePageBlock();
assert.ok(block.includes("http://127.0.0.1:8080"), "README.md's page block no longer names the default address");
const example = `<!doctype html>\n<title>My app</title>\n${block}\n`;
let gw;
let site;
let siteUrl;
let browser;

before(async () => {
  const port = await freePort();
  siteUrl = `http://127.0.0.1:${port}`;
  gw = await startGateway({ args: ["--allowed-origins", siteUrl] });
  site = createServer((req, res) => {
    if (req.url === "/favicon.ico") {
      res.writeHead(204).end();
      return;
    }
    if (req.url !== "/") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(example.replaceAll("http://127.0.0.1:8080", gw.url));
  });
  await new Promise((resolve) => site.listen(port, "127.0.0.1", resolve));
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await new Promise((resolve) => site?.close(resolve));
  await gw?.stop();
});

test("README.md's page example works from another origin", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const watch = watchConsole(page);
  await page.goto(`${siteUrl}/`);
  let mine;
  await until(async () => {
    const sessions = await gw.api("/v1/sessions");
    mine = sessions.body.sessions?.find((s) => s.tools?.some?.((t) => (t.name ?? t) === "page_title"));
    return mine !== undefined;
  }, 15000, "the page's page_title tool registered");
  const record = await gw.call(mine.session_id, "page_title", {}, { timeout_ms: 10000 });
  assert.equal(record.status, "completed", JSON.stringify(record));
  assert.deepEqual(record.output, { title: "My app" });
  await context.close();
  assert.deepEqual(watch.problems, [], "the page logged errors");
});
