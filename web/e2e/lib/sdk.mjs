// The hooks the SDK test files share: one gateway for the file, and the
// clients a test made closed after it.
import { before, after, afterEach } from "node:test";
import { ToolgateClient } from "../../static/toolgate.js";
import { startGateway } from "./gateway.mjs";

/**
 * Registers the hooks and returns newClient(opts), which makes a client of
 * the file's gateway with defaults and opts (no storage unless given) and
 * closes it after the test. setGateway is called with the gateway once it
 * has started.
 */
export function sdkFixture(defaults, setGateway) {
  let gw;
  const clients = [];
  before(async () => {
    gw = await startGateway();
    setGateway(gw);
  });
  after(async () => {
    await gw?.stop();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  return function newClient(opts = {}) {
    const client = new ToolgateClient({ baseUrl: gw.url, storage: null, ...defaults, ...opts });
    clients.push(client);
    return client;
  };
}
