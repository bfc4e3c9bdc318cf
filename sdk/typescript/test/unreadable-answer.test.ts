// A complete answer to POST /v1/calls that the SDK cannot read (a proxy or
// WAF that replaced chiod's body with its own page, or an answer over the
// size limit, or JSON naming no status chiod sends) comes after chiod
// decided and ran the call. callTool must throw "outcome_unknown" naming
// the requestId (it may have run: retry with the same id or await it), as the Go and Python SDKs do, not a plain
// "error" an agent would read as "the call failed" and resubmit.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError } from "@chio-protocol/sdk";

import { chiod, stopChiod } from "./harness.js";

after(stopChiod);

const MAX = 16 << 20;

/** Forwards to chiod; each POST /v1/calls answer's body is replaced by rewrite(original). */
async function rewritingProxy(target: string, rewrite: (s: string) => string): Promise<{ url: string; ids: string[]; close: () => void }> {
  const ids: string[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const headers: Record<string, string> = {};
    for (const h of ["content-type", "accept", "authorization", "chio-proof", "idempotency-key"]) {
      const v = req.headers[h];
      if (typeof v === "string") headers[h] = v;
    }
    const init: RequestInit = { method: req.method!, headers };
    if (body) init.body = body;
    const up = await fetch(target + req.url, init);
    let text = await up.text();
    if (req.method === "POST" && req.url === "/v1/calls") {
      ids.push(String(req.headers["idempotency-key"]));
      text = rewrite(text);
    }
    res.writeHead(up.status).end(text);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, ids, close: () => server.close() };
}

const rewrites: Record<string, (s: string) => string> = {
  "not JSON": () => "<html><body>OK</body></html>",
  "unknown status": () => '{"status":"paused"}',
  "empty object": () => "{}",
  "too large": (s) => s.trim() + " ".repeat(MAX + 1),
};

for (const [name, rewrite] of Object.entries(rewrites)) {
  test(`callTool: an unreadable answer (${name}) to a call that ran is outcome_unknown`, async () => {
    const d = await chiod();
    const agent = await d.newAgent("echo");
    const direct = new ChioClient({ url: d.url, keyFile: agent.keyFile, capabilityFile: agent.capabilityFile });
    const p = await rewritingProxy(d.url, rewrite);
    try {
      const c = new ChioClient({ url: p.url, keyFile: agent.keyFile, capabilityFile: agent.capabilityFile });
      const requestId = `unreadable-${Date.now()}-${name.replaceAll(" ", "-")}`;
      let err: unknown;
      try {
        await c.callTool({ server: "demo", tool: "echo", arguments: { msg: `pay once, ${name}` }, requestId });
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof ChioError, `no ChioError: ${String(err)}`);
      assert.deepEqual(p.ids, [requestId]);
      const ran = await direct.status(requestId);
      assert.equal(ran.status, "allowed", "the call did not run at chiod");
      assert.equal(err.code, "outcome_unknown", `call ${requestId} ran, yet callTool threw ${err.code}: ${err.message}`);
      assert.equal(err.requestId, requestId);
    } finally {
      p.close();
    }
  });
}
