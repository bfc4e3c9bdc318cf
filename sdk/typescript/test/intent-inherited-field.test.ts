// governedIntent's fields are purpose, maxAmount, actionCategory and
// context; any other is an error before anything is sent (README, docs/
// agent-developer.md: "an unknown field is an error, not dropped"). A name
// every JavaScript object inherits ("constructor", "toString", a parsed
// "__proto__") is no exception.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey, type GovernedIntent } from "@chio-protocol/sdk";

let requests = 0;
const server = createServer((req, res) => {
  requests++;
  req.resume();
  req.on("end", () => {
    res.writeHead(400, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ error: "bad_request", message: "reached chiod" }));
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
after(() => server.close());

const key = PrivateKey.fromSeed(new Uint8Array(32));
const client = new ChioClient({
  url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  key,
  capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }),
});

const intents: [string, unknown][] = [
  ["constructor", { purpose: "refund", constructor: "x" }],
  ["toString", { purpose: "refund", toString: "x" }],
  ["__proto__ (parsed)", JSON.parse('{"purpose":"refund","__proto__":"x"}')],
];

for (const [name, intent] of intents) {
  test(`governedIntent with a field named ${name} is bad_request, not sent`, async () => {
    requests = 0;
    await assert.rejects(
      client.callTool({ server: "pay", tool: "issue_refund", arguments: {}, governedIntent: intent as GovernedIntent }),
      (e: unknown) => {
        assert.ok(e instanceof ChioError, String(e));
        assert.doesNotMatch(e.message, /reached chiod/, "sent to chiod");
        assert.equal(e.code, "bad_request", e.message);
        return true;
      },
    );
    assert.equal(requests, 0, "requests that reached the server");
  });
}
