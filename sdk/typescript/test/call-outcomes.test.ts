// testdata/sdk/call_outcomes.json, shared with the Go and Python SDKs'
// tests: what callTool reports when every attempt meets the same answer or
// transport failure, served by a real loopback listener.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { STATUS_CODES } from "node:http";
import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { test } from "node:test";

import { ChioClient, ChioError, PrivateKey, type Allowed, type CallResult } from "@chio-protocol/sdk";

import { ROOT } from "./paths.js";

interface Case {
  name: string;
  refused?: boolean;
  close_after_request?: boolean;
  answer?: { status: number; headers?: Record<string, string>; body?: string; body_hex?: string };
  outcome: string;
  output?: string;
  attempts: number;
}

const CASES = (JSON.parse(readFileSync(join(ROOT, "testdata", "sdk", "call_outcomes.json"), "utf8")) as { cases: Case[] }).cases;

function outcomeOf(e: ChioError): string {
  if (e.name === "NotSentError") return "not_sent"; // before "unavailable", its code
  if (["outcome_unknown", "unavailable", "bad_request", "unauthorized", "conflict"].includes(e.code)) return e.code;
  return "other";
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Calls onRequest once a whole request (head and Content-Length body) has arrived on sock. */
function onWholeRequest(sock: Socket, onRequest: () => void): void {
  let buf = Buffer.alloc(0);
  sock.on("data", (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0) return;
    const m = /\r\ncontent-length:\s*(\d+)/i.exec(buf.subarray(0, end).toString("latin1"));
    if (buf.length - end - 4 < Number(m?.[1] ?? 0)) return;
    sock.removeAllListeners("data");
    onRequest();
  });
}

for (const c of CASES) {
  test(`call outcome: ${c.name}`, async () => {
    let requests = 0;
    let port: number;
    const server = createServer((sock: Socket) => {
      sock.on("error", () => {});
      onWholeRequest(sock, () => {
        requests++;
        const a = c.answer;
        if (!a) return void sock.destroy(); // close_after_request: no answer
        const body = a.body_hex !== undefined ? Buffer.from(a.body_hex, "hex") : Buffer.from(a.body ?? "");
        let head = `HTTP/1.1 ${a.status} ${STATUS_CODES[a.status] ?? ""}\r\nConnection: close\r\nContent-Length: ${body.length}\r\n`;
        for (const k of Object.keys(a.headers ?? {}).sort()) head += `${k}: ${a.headers![k]}\r\n`;
        sock.end(Buffer.concat([Buffer.from(head + "\r\n"), body]));
      });
    });
    if (c.refused) port = await closedPort();
    else {
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      port = (server.address() as AddressInfo).port;
    }
    try {
      const key = PrivateKey.fromSeed(new Uint8Array(32));
      const client = new ChioClient({ url: `http://127.0.0.1:${port}`, key, capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }) });
      let err: unknown;
      let res: CallResult | undefined;
      try {
        res = await client.callTool({ server: "pay", tool: "issue_refund", arguments: { amount: 450 }, requestId: "req-outcome" });
      } catch (e) {
        err = e;
      }
      if (res !== undefined) {
        assert.equal(res.status === "allowed" && !res.failed ? "succeeded" : "other", c.outcome, JSON.stringify(res));
        // The tool's output, equal to its text as this SDK parses JSON.
        assert.deepEqual((res as Allowed).output, JSON.parse(c.output!));
      } else {
        assert.ok(err instanceof ChioError, `not a ChioError: ${err}`);
        assert.equal(outcomeOf(err), c.outcome, err.message);
      }
      assert.equal(requests, c.attempts, "requests that reached the listener");
    } finally {
      if (server.listening) server.close();
    }
  });
}
