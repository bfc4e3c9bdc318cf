// Member names of one object that differ only in letter case are refused,
// as chiod refuses them (Unicode simple case folding, Go's strings.EqualFold);
// testdata/vectors/canonical.json holds the shared cases.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CanonicalJSONError, RawJSON, canonicalize, canonicalizeText, foldKey, jcs, parameterHash, parseStrict } from "@chio-protocol/sdk";

function refused(f: () => unknown): string {
  let msg = "";
  assert.throws(f, (e: unknown) => {
    msg = e instanceof Error ? e.message : "";
    return e instanceof CanonicalJSONError && e.reason === "duplicate_key";
  });
  return msg;
}

test("folding table: hand-picked orbits", () => {
  // Written out by hand from the Unicode data, not from the table.
  const orbits: number[][] = [
    [0x41, 0x61], // A a
    [0x4b, 0x6b, 0x212a], // K k KELVIN SIGN
    [0x53, 0x73, 0x17f], // S s LATIN SMALL LETTER LONG S
    [0xb5, 0x39c, 0x3bc], // MICRO SIGN, Greek capital and small mu
    [0xc5, 0xe5, 0x212b], // Å å ANGSTROM SIGN
    [0xdf, 0x1e9e], // ß ẞ
    [0x3a3, 0x3c2, 0x3c3], // Σ ς σ
    [0x398, 0x3b8, 0x3d1, 0x3f4], // Θ θ ϑ ϴ
    [0x13a0, 0xab70], // Cherokee A, capital and small
    [0x10400, 0x10428], // Deseret long I, beyond the BMP
  ];
  for (const orbit of orbits) {
    for (const cp of orbit) {
      assert.equal(foldKey(String.fromCodePoint(cp)), String.fromCodePoint(orbit[0]!), `U+${cp.toString(16)} folds to the least of its orbit`);
    }
  }
  // Dotless ı and dotted İ have full case mappings to i/I but no simple
  // folding; digits, "_", CJK and emoji have none at all.
  for (const c of ["\u0131", "\u0130", "1", "_", "\u4e2d", "\u{1F600}"]) assert.equal(foldKey(c), c);
  assert.equal(foldKey("i"), "I");
  // ß has no one-code-point fold to "ss" (toUpperCase has).
  assert.notEqual(foldKey("ss"), foldKey("\u00df"));
  assert.equal(foldKey("unit\u017f"), foldKey("UNITS"));
});

test("folding table: a key is the least of its orbit, and its own key", () => {
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const k = foldKey(String.fromCodePoint(cp));
    assert.ok(k.codePointAt(0)! <= cp && [...k].length === 1, `U+${cp.toString(16)}`);
    if (foldKey(k) !== k) assert.fail(`the key of U+${cp.toString(16)} is not its own key`);
  }
});

test("case twins are refused in JavaScript values", () => {
  for (const v of [
    { a: 1, A: 2 },
    { units: 100, "unit\u017f": 9000000 },
    { k: 1, "\u212a": 2 },
    { "σ": 1, "ς": 2 },
    { x: { cost: 1, "co\u017ft": 999999 } },
    { l: [{ ok: 1 }, [{ id: 1, ID: 2 }]] },
    { a: new RawJSON('{"b":1}'), A: 2 },
  ]) {
    refused(() => canonicalize(v));
  }
  // What an agent hashes and signs: refused before chiod would.
  refused(() => parameterHash("payment-server", "issue_refund", { amount: 1, AMOUNT: 9 }, null));
  refused(() => parameterHash("payment-server", "issue_refund", {}, { max_amount: { units: 100, "unit\u017f": 9000000 } }));
});

test("case twins are refused in JSON text; the error names both visibly", () => {
  const msg = refused(() => canonicalizeText('{"units":100,"unit\\u017f":9000000}'));
  assert.match(msg, /"units" and "unit\\u017f"/);
  refused(() => new RawJSON('{"Decision":"approved","decision":"denied"}'));
  refused(() => parseStrict(Buffer.from('{"\\ud801\\udc00":1,"\\ud801\\udc28":2}')));
  refused(() => parseStrict('{"\u{10400}":1,"\u{10428}":2}'));
});

test("case twins in wide objects", () => {
  const wide: Record<string, number> = {};
  for (let i = 0; i < 100; i++) wide[`m${i}`] = i;
  refused(() => canonicalize({ ...wide, M57: 1 }));
  refused(() => canonicalize({ units: 1, ...wide, UNITS: 2 }));
  canonicalize({ ...wide, M: 1 });
});

test("other refusals come before case twins, as in chiod", () => {
  const reason = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return e instanceof CanonicalJSONError ? e.reason : String(e);
    }
    return "accepted";
  };
  assert.equal(reason(() => parseStrict('{"a":1,"A":2,"n":[9007199254740993]}')), "unsafe_number");
  assert.equal(reason(() => parseStrict('{"a":1,"A":2,"s":"\\udc00"}')), "invalid");
  assert.equal(reason(() => parseStrict('{"a":1,"A":2} x')), "invalid");
});

test("distinct names, and names in different objects, are accepted", () => {
  assert.equal(canonicalize({ ab: 1, ba: 2 }), '{"ab":1,"ba":2}');
  assert.equal(canonicalize({ ss: 1, "\u00df": 2 }), '{"ss":1,"\u00df":2}');
  assert.equal(canonicalize({ i: 1, "\u0131": 2, "\u0130": 3 }), '{"i":1,"\u0130":3,"\u0131":2}');
  assert.equal(canonicalize({ a: 1, b: { A: 2 }, c: [{ A: 3 }, { a: 4 }] }), '{"a":1,"b":{"A":2},"c":[{"A":3},{"a":4}]}');
  assert.equal(canonicalize({ Units: 1, currency: "USD" }), '{"Units":1,"currency":"USD"}');
  // Plain RFC 8785 has none of chio's rules.
  assert.equal(jcs({ a: 1, A: 2 }), '{"A":2,"a":1}');
});
