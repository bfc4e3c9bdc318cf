// A signal or timeout that ends callTool after attempts that never reached
// chiod, and connects that do not complete: nothing of the call was
// written, so it did not run. That is a NotSentError (code "unavailable"),
// never "outcome_unknown" ("it may have run"), as in the Go and Python SDKs.
//
// stalledPort() is a loopback listener whose TCP connects do not complete:
// backlog 1, never accepting, its accept queue filled first, so Linux drops
// every further SYN (the client retransmits it). Linux only.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { connect, createServer, type Socket } from "node:net";
import { createInterface } from "node:readline";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey, type ClientOptions } from "@chio-protocol/sdk";

const LINUX = process.platform === "linux";
const cleanups: (() => void)[] = [];
after(() => cleanups.forEach((f) => f()));

function clientAt(url: string, opts: ClientOptions = {}): ChioClient {
  const key = PrivateKey.fromSeed(new Uint8Array(32));
  return new ChioClient({ url, key, capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }), ...opts });
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

function tryConnect(port: number, ms: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    const t = setTimeout(() => {
      s.destroy();
      resolve(undefined);
    }, ms);
    s.once("connect", () => {
      clearTimeout(t);
      resolve(s);
    });
    s.once("error", () => {
      clearTimeout(t);
      resolve(undefined);
    });
  });
}

/**
 * A listener that never accepts: a child node process listens with backlog
 * 1 (Node reads 0 as its default, 511) and then blocks its event loop for
 * good, so the kernel queues connections that nobody accepts; once the
 * queue is full every further SYN is dropped.
 */
async function stalledPort(): Promise<number> {
  const child = spawn(process.execPath, ["-e", `
    const s = require("node:net").createServer();
    s.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
      process.stdout.write(String(s.address().port) + "\\n", () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
    });`], { stdio: ["ignore", "pipe", "inherit"] });
  cleanups.push(() => child.kill("SIGKILL"));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`the listener exited (${code})`)));
  });
  const port = Number(line);
  for (let i = 0; ; i++) {
    const s = await tryConnect(port, 300);
    if (!s) break;
    cleanups.push(() => s.destroy());
    assert.ok(i < 64, "the listener's backlog never filled");
  }
  return port;
}

async function callError(client: ChioClient, requestId: string, opts?: { signal?: AbortSignal; timeoutMs?: number }): Promise<ChioError> {
  try {
    await client.callTool({ server: "pay", tool: "issue_refund", arguments: { amount: 450 }, requestId }, opts);
  } catch (e) {
    assert.ok(e instanceof ChioError, `not a ChioError: ${e}`);
    return e;
  }
  assert.fail("callTool did not throw");
}

function assertNotSent(e: ChioError, requestId: string): void {
  assert.notEqual(e.code, "outcome_unknown", `a call never sent reads as outcome unknown: ${e.message}`);
  assert.equal(e.name, "NotSentError", e.message);
  assert.equal(e.code, "unavailable");
  assert.equal(e.requestId, requestId);
}

test("a signal that ends a call refused on every attempt: not sent, at once", async () => {
  const start = Date.now();
  const e = await callError(clientAt(`http://127.0.0.1:${await closedPort()}`), "req-refused-abort", { signal: AbortSignal.timeout(400) });
  assertNotSent(e, "req-refused-abort");
  assert.ok(Date.now() - start < 1500, `callTool ran ${Date.now() - start} ms past its signal`);
});

test("a timeout that ends a call refused on every attempt: not sent", async () => {
  const start = Date.now();
  const e = await callError(clientAt(`http://127.0.0.1:${await closedPort()}`), "req-refused-timeout", { timeoutMs: 400 });
  assertNotSent(e, "req-refused-timeout");
  assert.ok(Date.now() - start < 1500, `callTool ran ${Date.now() - start} ms past its timeout`);
});

test("a signal that ends a call while its connect is pending: not sent", { skip: !LINUX }, async () => {
  const e = await callError(clientAt(`http://127.0.0.1:${await stalledPort()}`), "req-connect-abort", { signal: AbortSignal.timeout(300) });
  assertNotSent(e, "req-connect-abort");
});

test("a connect that never completes ends in the connect timeout: not sent", { skip: !LINUX }, async () => {
  // undici's own connect timeout (10 s) on each of the four attempts.
  const e = await callError(clientAt(`http://127.0.0.1:${await stalledPort()}`), "req-connect-stall");
  assertNotSent(e, "req-connect-stall");
  assert.match(e.message, /UND_ERR_CONNECT_TIMEOUT|Connect Timeout/);
});

test("a signal that ends a call whose request was written: outcome unknown", async () => {
  // The server reads the request and never answers: the call may have run.
  let reached!: () => void;
  const read = new Promise<void>((r) => (reached = r));
  const held: Socket[] = [];
  const server = createServer((sock: Socket) => {
    held.push(sock);
    sock.once("data", () => reached());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const ac = new AbortController();
    void read.then(() => ac.abort(new Error("the caller gave up")));
    const e = await callError(clientAt(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), "req-written-abort", { signal: ac.signal });
    assert.equal(e.code, "outcome_unknown", e.message);
    assert.notEqual(e.name, "NotSentError");
    assert.equal(e.requestId, "req-written-abort");
  } finally {
    held.forEach((s) => s.destroy());
    server.close();
  }
});

test("a timeout after a lost answer and refusals: outcome unknown", async () => {
  let reached = false;
  const server = createServer((sock: Socket) => {
    server.close(); // every later attempt is refused
    sock.once("data", () => {
      reached = true;
      sock.destroy(); // no answer: the call may have run
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const e = await callError(clientAt(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), "req-lost-timeout", { timeoutMs: 600 });
  assert.ok(reached, "the first attempt did not reach the server");
  assert.equal(e.code, "outcome_unknown", e.message);
  assert.equal(e.requestId, "req-lost-timeout");
});

test("confirm's timeoutMs bounds its call too: timed_out, caused by the call not sent", { skip: !LINUX }, async () => {
  const client = clientAt(`http://127.0.0.1:${await stalledPort()}`);
  const start = Date.now();
  try {
    await client.confirm("Deploy?", undefined, { timeoutMs: 300 });
    assert.fail("confirm did not throw");
  } catch (e) {
    assert.ok(e instanceof ChioError, `not a ChioError: ${e}`);
    assert.equal(e.code, "timed_out", e.message);
    assert.ok(e.cause instanceof ChioError && e.cause.name === "NotSentError", `cause: ${e.cause}`);
  }
  assert.ok(Date.now() - start < 5000, `confirm ran ${Date.now() - start} ms past its timeout`);
});
