// A private key file others may read lets them sign as its holder (an
// approver's key approves, an agent's calls). Loading one emits a warning
// (code CHIO_KEY_FILE_MODE) with the fix; it still loads: keys are copied
// between machines whose modes the SDK does not control, and the
// repository's demo keys check out 0644.

import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { PrivateKey } from "@chio-protocol/sdk";

function keyFile(): string {
  const { privateKey } = generateKeyPairSync("ed25519");
  const path = join(mkdtempSync(join(tmpdir(), "chio-key-")), "me.pem");
  writeFileSync(path, privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  return path;
}

async function warningsWhile(f: () => void): Promise<Error[]> {
  const seen: Error[] = [];
  const on = (w: Error) => seen.push(w);
  process.on("warning", on);
  try {
    f();
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
  } finally {
    process.off("warning", on);
  }
  return seen.filter((w) => (w as NodeJS.ErrnoException).code === "CHIO_KEY_FILE_MODE");
}

test("a key file private to its owner loads without a warning", { skip: process.platform === "win32" }, async () => {
  const path = keyFile();
  assert.deepEqual(await warningsWhile(() => PrivateKey.load(path)), []);
});

test("a key file others may read warns with the fix", { skip: process.platform === "win32" }, async () => {
  const path = keyFile();
  chmodSync(path, 0o644);
  let key: PrivateKey | undefined;
  const seen = await warningsWhile(() => {
    key = PrivateKey.load(path);
  });
  assert.equal(seen.length, 1, "one warning");
  const message = seen[0]!.message;
  assert.match(message, /mode 0644/);
  assert.ok(message.includes(`chmod 600 ${path}`), message);
  assert.ok(message.includes(key!.publicKey), message);
});
