// The README's "use from a page in ten lines" example (fixtures/readme-example.html),
// served from another origin than the gateway's, which allows it with
// --allowed-origins: the SDK loads from the gateway, registers its tool over
// CORS and answers a call on the stream.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { startGateway } from "../lib/gateway.mjs";
import { freePort } from "../lib/nginx.mjs";
import { launchBrowser, watchConsole } from "../lib/browser.mjs";

const example = readFileSync(new URL("../fixtures/readme-example.html", import.meta.url), "utf8");
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
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(example.replaceAll("{{GATEWAY}}", gw.url));
  });
  await new Promise((resolve) => site.listen(port, "127.0.0.1", resolve));
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await new Promise((resolve) => site?.close(resolve));
  await gw?.stop();
});

test("the README example works from another origin", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const watch = watchConsole(page);
  await page.goto(`${siteUrl}/`);
  await page.waitForSelector('body[data-transport="sse"]', { state: "attached", timeout: 15000 });
  const sessions = await gw.api("/v1/sessions");
  const mine = sessions.body.sessions.find((s) => s.tools?.some?.((t) => (t.name ?? t) === "page_title")) ?? sessions.body.sessions.at(-1);
  const record = await gw.call(mine.session_id, "page_title", {}, { timeout_ms: 10000 });
  assert.equal(record.status, "completed", JSON.stringify(record));
  assert.deepEqual(record.output, { title: "My app" });
  await context.close();
  assert.deepEqual(watch.problems, [], "the page logged errors");
});
