// RFC 8785 against the RFC's published vectors (internal/canon/testdata/jcs,
// shared with the Go implementation), and chio's strictness on JavaScript values.

import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { CanonicalJSONError, MAX_DEPTH, RawJSON, canonicalize, canonicalizeText, jcs, parseStrict } from "@chio-protocol/sdk";

import { ROOT } from "./paths.js";

const JCS = join(ROOT, "internal", "canon", "testdata", "jcs");

function refused(f: () => unknown, reason: string): void {
  assert.throws(f, (e: unknown) => e instanceof CanonicalJSONError && e.reason === reason);
}

test("RFC 8785 Appendix B: number serialization", () => {
  let n = 0;
  for (const line of readFileSync(join(JCS, "numbers.txt"), "utf8").split("\n")) {
    if (!line.trim() || line.startsWith("#")) continue;
    const [bits, want] = line.split(/\s+/) as [string, string];
    const x = Buffer.from(bits, "hex").readDoubleBE(0);
    assert.equal(jcs([x]), `[${want}]`, bits);
    n++;
  }
  assert.equal(n, 24);
});

test("RFC 8785 golden files", () => {
  const files = readdirSync(JCS).filter((f) => f.endsWith(".in.json"));
  assert.ok(files.length >= 3);
  for (const f of files) {
    const text = readFileSync(join(JCS, f), "utf8");
    const want = readFileSync(join(JCS, f.replace(".in.json", ".out.json")), "utf8").replace(/\n$/, "");
    // Plain RFC 8785 reproduces the RFC's output exactly...
    assert.equal(jcs(JSON.parse(text)), want, f);
    // ...and chio's strict form agrees, except on the RFC's example that
    // spells numbers inexactly on purpose (333333333.33333329 reads as
    // 333333333.3333333), which chio refuses (SPEC §9).
    if (text.includes("333333333.33333329")) refused(() => canonicalizeText(text), "inexact_number");
    else assert.equal(canonicalizeText(text), want, f);
  }
});

test("integers are exact up to 2^53", () => {
  assert.equal(canonicalize([2 ** 53, -(2 ** 53), 0, -0, 2n ** 53n]), "[9007199254740992,-9007199254740992,0,0,9007199254740992]");
  refused(() => canonicalize([2 ** 53 + 2]), "unsafe_number");
  refused(() => canonicalize([2n ** 53n + 1n]), "unsafe_number");
  refused(() => canonicalize([1e21]), "unsafe_number");
  refused(() => canonicalize([Infinity]), "number_range");
  refused(() => canonicalize([NaN]), "number_range");
});

test("strings", () => {
  assert.equal(canonicalize("\u2028\x7f\x00<&>"), '"\u2028\x7f\\u0000<&>"');
  refused(() => canonicalize("\ud800"), "invalid");
  refused(() => canonicalize({ "\udc00": 1 }), "invalid");
  refused(() => canonicalize("\ude00\ud83d"), "invalid");
  assert.equal(canonicalize({ "\uff00": 1, "\u{1F600}": 2 }), '{"\u{1F600}":2,"\uff00":1}');
});

test("only plain JSON values", () => {
  assert.equal(canonicalize({ a: undefined, b: 1 }), '{"b":1}'); // as JSON.stringify
  refused(() => canonicalize([undefined]), "invalid");
  // A hole reads as undefined (JSON.stringify writes null): refused too, never
  // dropped. [,] would otherwise be signed and sent as [], and [1,,2] as
  // that text, which is not JSON.
  refused(() => canonicalize([1, , 2]), "invalid");
  refused(() => canonicalize({ a: new Array(1) }), "invalid");
  refused(() => canonicalize({ d: new Date(0) }), "invalid");
  refused(() => canonicalize({ m: new Map() }), "invalid");
  refused(() => canonicalize(() => 1), "invalid");
  assert.equal(canonicalize(Object.assign(Object.create(null), { z: 1, a: 2 })), '{"a":2,"z":1}');
});

test("depth and cycles", () => {
  let v: unknown[] = [];
  for (let i = 0; i < MAX_DEPTH - 1; i++) v = [v];
  canonicalize(v);
  refused(() => canonicalize([v]), "too_deep");
  const cyc: unknown[] = [];
  cyc.push(cyc);
  refused(() => canonicalize(cyc), "too_deep");
});

test("strict parsing keeps spellings and __proto__ as data", () => {
  assert.equal(canonicalize({ a: new RawJSON('{"x": 1.50}') }), '{"a":{"x":1.5}}');
  refused(() => new RawJSON('{"x": 9007199254740993.0}'), "inexact_number"); // a number would already be 2^53
  const o = parseStrict('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(o), Object.prototype);
  assert.deepEqual(Object.keys(o), ["__proto__"]);
  assert.equal(canonicalize(o), '{"__proto__":{"polluted":true}}');
  refused(() => parseStrict("\"\ud800\""), "invalid"); // a JavaScript string may hold one raw
});

test("shortest round trip for random doubles", () => {
  const b = Buffer.alloc(8);
  let seed = 8785;
  for (let i = 0; i < 20000; i++) {
    for (let j = 0; j < 8; j++) b[j] = (seed = (seed * 1103515245 + 12345) & 0x7fffffff) >> 16;
    const x = b.readDoubleBE(0);
    if (!Number.isFinite(x)) continue;
    assert.equal(Number(jcs(x)), x);
  }
});
