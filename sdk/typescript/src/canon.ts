/**
 * Canonical JSON: RFC 8785 (JCS) under chio's strict rules (SPEC §2, §9).
 *
 * Written here rather than taken from npm: RFC 8785 is small once
 * ECMAScript's own Number#toString does the number formatting, and chio
 * needs more than the RFC — duplicate names, lone surrogates, depth and the
 * ±2^53 rule — which a canonicalizer of already-parsed values cannot see.
 * This file passes the RFC's published vectors and testdata/vectors.
 *
 * - `canonicalize(value)` takes JavaScript values. A number there has
 *   already lost its spelling (JavaScript reads 9007199254740993 as 2^53),
 *   so only |n| ≤ 2^53 and finiteness can be checked.
 * - `parseStrict(text)` and `new RawJSON(text)` take JSON text and judge
 *   each number as written: integral values beyond ±2^53 in any spelling
 *   (9007199254740993, 1e21), and literals that are not exactly the double
 *   they read as (9007199254740993.0 and 9.007199254740993e15 read as 2^53;
 *   1e-400 reads as 0) are refused; so are duplicate names (also "a" vs
 *   "\u0061"), invalid UTF-8, lone surrogates and nesting deeper than 64.
 *   Pass tool arguments an LLM wrote as RawJSON.
 * - Both refuse, as chiod, an object holding two member names that differ
 *   only in letter case ("a" and "A", "units" and "unit\u017f"; Unicode
 *   simple case folding, see casefold.ts), with the reason "duplicate_key".
 * - `jcs(value)` is plain RFC 8785 with none of chio's limits.
 */

import { checkMemberCase, mayFold } from "./casefold.js";
import { CanonicalJSONError } from "./errors.js";

export const MAX_DEPTH = 64;
/** Untrusted text meets this limit before the parser. */
export const MAX_TEXT_BYTES = 16 << 20;
const MAX_SAFE = 2 ** 53;
/** Shortest forms of doubles need at most 24 characters; the rest is room for harmless trailing zeros (as chiod). */
const MAX_NUMBER_LEN = 100;

/** A JSON value as this SDK handles it. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

/** JSON text to send as written, parsed strictly at once (see parseStrict). */
export class RawJSON {
  readonly text: string;
  readonly value: JSONValue;

  constructor(text: string | Uint8Array) {
    this.value = parseStrict(text);
    this.text = typeof text === "string" ? text : decodeUTF8(text);
  }
}

/** The canonical JSON text of a value, refusing what chio refuses. */
export function canonicalize(value: unknown): string {
  return encode(value, 0, true);
}

/** canonicalize as UTF-8 bytes: what is signed and hashed. */
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalize(value), "utf8");
}

/** The canonical text of JSON text, checked strictly. */
export function canonicalizeText(text: string | Uint8Array): string {
  return canonicalize(parseStrict(text));
}

/** Plain RFC 8785 of a value: no chio limits on numbers or depth. */
export function jcs(value: unknown): string {
  return encode(value, 0, false);
}

// --- encoding ---------------------------------------------------------------

function encode(v: unknown, depth: number, strict: boolean): string {
  if (v instanceof RawJSON) v = v.value;
  switch (typeof v) {
    case "string":
      return quote(v);
    case "boolean":
      return v ? "true" : "false";
    case "number":
      if (!Number.isFinite(v)) throw new CanonicalJSONError("number_range", `${v} is not a finite number`);
      if (strict && Math.abs(v) > MAX_SAFE) {
        throw new CanonicalJSONError("unsafe_number", `number ${v} is beyond ±2^53; send it as a string`);
      }
      // ECMAScript's Number::toString is RFC 8785's number format (-0 → "0").
      return String(v);
    case "bigint":
      if (v > BigInt(MAX_SAFE) || v < -BigInt(MAX_SAFE)) {
        throw new CanonicalJSONError("unsafe_number", `integer ${clip(String(v))} is beyond ±2^53; send it as a string`);
      }
      return String(v);
    case "object": {
      if (v === null) return "null";
      if (strict && ++depth > MAX_DEPTH) throw new CanonicalJSONError("too_deep", `JSON nested deeper than ${MAX_DEPTH}`);
      if (Array.isArray(v)) {
        // By index, not map: map skips holes, so [,] would come out as []
        // and [1,,2] as "[1,,2]". A hole reads as undefined and is refused.
        const items: string[] = [];
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i];
          if (x === undefined) throw new CanonicalJSONError("invalid", "undefined (or an array hole) is not a JSON value");
          items.push(encode(x, depth, strict));
        }
        return "[" + items.join(",") + "]";
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) {
        throw new CanonicalJSONError("invalid", `${v.constructor?.name ?? "object"} is not a JSON value (use a plain object)`);
      }
      const obj = v as Record<string, unknown>;
      // Sorted by UTF-16 code units: the default string sort (RFC 8785 §3.2.3).
      // Members that are undefined are left out, as JSON.stringify does.
      const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
      const body = keys.map((k) => quote(k) + ":" + encode(obj[k], depth, strict)).join(",");
      if (strict) checkMemberCase(keys);
      return "{" + body + "}";
    }
    default:
      throw new CanonicalJSONError("invalid", `${typeof v} is not a JSON value`);
  }
}

/** RFC 8785 §3.2.2.2: escape only '"', '\\' and C0 controls; refuse lone surrogates. */
function quote(s: string): string {
  let out = '"';
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = s.charCodeAt(i + 1);
      if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) {
        throw new CanonicalJSONError("invalid", `string holds a lone surrogate U+${c.toString(16).toUpperCase()}`);
      }
      i++; // a valid pair is written as is
      continue;
    }
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) continue;
    out += s.slice(from, i) + escape(c);
    from = i + 1;
  }
  return out + s.slice(from) + '"';
}

function escape(c: number): string {
  switch (c) {
    case 0x08: return "\\b";
    case 0x09: return "\\t";
    case 0x0a: return "\\n";
    case 0x0c: return "\\f";
    case 0x0d: return "\\r";
    case 0x22: return '\\"';
    case 0x5c: return "\\\\";
  }
  return "\\u" + c.toString(16).padStart(4, "0");
}

// --- strict parsing ---------------------------------------------------------

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function decodeUTF8(b: Uint8Array): string {
  try {
    // ignoreBOM keeps a byte order mark in the text, where the parser refuses it.
    return utf8.decode(b);
  } catch {
    throw new CanonicalJSONError("invalid", "invalid UTF-8");
  }
}

/** Parse one JSON value strictly (see the file comment). */
export function parseStrict(text: string | Uint8Array): JSONValue {
  if (typeof text !== "string") {
    if (text.byteLength > MAX_TEXT_BYTES) throw new CanonicalJSONError("invalid", `JSON text larger than ${MAX_TEXT_BYTES} bytes`);
    text = decodeUTF8(text);
  } else if (text.length > MAX_TEXT_BYTES) {
    throw new CanonicalJSONError("invalid", `JSON text larger than ${MAX_TEXT_BYTES} characters`);
  }
  const p = new Parser(text);
  p.ws();
  const v = p.value(0);
  p.ws();
  if (p.i !== text.length) p.fail("trailing data after the JSON value");
  // Last, as chiod: any other refusal anywhere in the text wins.
  for (const names of p.mayFold) checkMemberCase(names);
  return v;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

class Parser {
  i = 0;
  /** The member names of each object holding a name that may fold (see casefold.ts). */
  readonly mayFold: string[][] = [];
  constructor(readonly s: string) {}

  fail(msg: string): never {
    throw new CanonicalJSONError("invalid", `invalid JSON at offset ${this.i}: ${msg}`);
  }

  ws(): void {
    for (;;) {
      const c = this.s.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.i++;
    }
  }

  value(depth: number): JSONValue {
    const c = this.s[this.i];
    if (c === "{" || c === "[") {
      if (depth + 1 > MAX_DEPTH) throw new CanonicalJSONError("too_deep", `JSON nested deeper than ${MAX_DEPTH}`);
      return c === "{" ? this.object(depth + 1) : this.array(depth + 1);
    }
    if (c === '"') return this.string();
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return this.number();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return v;
      }
    }
    return this.fail(c === undefined ? "unexpected end" : `unexpected ${JSON.stringify(c)}`);
  }

  object(depth: number): JSONValue {
    const obj: { [key: string]: JSONValue } = {};
    const seen = new Set<string>();
    let folds = false;
    this.i++;
    this.ws();
    if (this.s[this.i] === "}") {
      this.i++;
      return obj;
    }
    for (;;) {
      if (this.s[this.i] !== '"') this.fail("expected a member name");
      const k = this.string();
      if (seen.has(k)) throw new CanonicalJSONError("duplicate_key", `duplicate object key ${JSON.stringify(k)}`);
      seen.add(k);
      folds ||= mayFold(k);
      this.ws();
      if (this.s[this.i] !== ":") this.fail("expected ':'");
      this.i++;
      this.ws();
      // defineProperty: a member named "__proto__" is data, not a prototype.
      Object.defineProperty(obj, k, { value: this.value(depth), enumerable: true, writable: true, configurable: true });
      this.ws();
      const c = this.s[this.i++];
      if (c === "}") {
        if (folds) this.mayFold.push([...seen]);
        return obj;
      }
      if (c !== ",") this.fail("expected ',' or '}'");
      this.ws();
    }
  }

  array(depth: number): JSONValue {
    const arr: JSONValue[] = [];
    this.i++;
    this.ws();
    if (this.s[this.i] === "]") {
      this.i++;
      return arr;
    }
    for (;;) {
      arr.push(this.value(depth));
      this.ws();
      const c = this.s[this.i++];
      if (c === "]") return arr;
      if (c !== ",") this.fail("expected ',' or ']'");
      this.ws();
    }
  }

  string(): string {
    let out = "";
    this.i++; // the opening quote
    let from = this.i;
    for (;;) {
      const c = this.s.charCodeAt(this.i);
      if (Number.isNaN(c)) this.fail("unterminated string");
      if (c === 0x22) {
        out += this.s.slice(from, this.i++);
        break;
      }
      if (c < 0x20) this.fail("control character in a string");
      if (c >= 0xd800 && c <= 0xdfff) {
        // Only reachable from a JavaScript string argument: decoded UTF-8 has no lone surrogates.
        const next = this.s.charCodeAt(this.i + 1);
        if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) this.fail("lone surrogate");
        this.i += 2;
        continue;
      }
      if (c !== 0x5c) {
        this.i++;
        continue;
      }
      out += this.s.slice(from, this.i);
      out += this.escape();
      from = this.i;
    }
    return out;
  }

  /** One escape sequence after the backslash at i; a \u surrogate must come in a pair. */
  escape(): string {
    const e = this.s[this.i + 1];
    this.i += 2;
    switch (e) {
      case '"': return '"';
      case "\\": return "\\";
      case "/": return "/";
      case "b": return "\b";
      case "f": return "\f";
      case "n": return "\n";
      case "r": return "\r";
      case "t": return "\t";
      case "u": {
        const hi = this.hex4();
        if (hi < 0xd800 || hi > 0xdfff) return String.fromCharCode(hi);
        if (hi > 0xdbff || this.s[this.i] !== "\\" || this.s[this.i + 1] !== "u") this.fail("lone surrogate");
        this.i += 2;
        const lo = this.hex4();
        if (lo < 0xdc00 || lo > 0xdfff) this.fail("lone surrogate");
        return String.fromCharCode(hi, lo);
      }
    }
    return this.fail("bad escape");
  }

  hex4(): number {
    const h = this.s.slice(this.i, this.i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) this.fail("bad \\u escape");
    this.i += 4;
    return parseInt(h, 16);
  }

  number(): number {
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.s);
    if (!m) return this.fail("bad number");
    this.i += m[0].length;
    return checkNumber(m[0]);
  }
}

/**
 * A JSON number literal's value, if the literal is exactly a double: the
 * decimal of that double's shortest form (what RFC 8785 writes), and within
 * ±2^53 when integral. 1.50 is; 9007199254740993.0 (which reads as 2^53),
 * 1e-400 (0) and 0.1000000000000000055511151231257827 (the double 0.1) are
 * not. The same rule as chiod's internal/canon.
 */
function checkNumber(lit: string): number {
  if (lit.length > MAX_NUMBER_LEN) throw new CanonicalJSONError("number_range", `number literal longer than ${MAX_NUMBER_LEN} characters`);
  if (!/[.eE]/.test(lit)) {
    const digits = lit.replace(/^-/, "");
    if (digits.length > 16 || BigInt(digits) > BigInt(MAX_SAFE)) {
      throw new CanonicalJSONError("unsafe_number", `integer ${clip(lit)} is beyond ±2^53; send it as a string`);
    }
    return Number(lit);
  }
  const v = Number(lit);
  if (!Number.isFinite(v)) throw new CanonicalJSONError("number_range", `number ${clip(lit)} is not a finite double`);
  if (Number.isInteger(v) && Math.abs(v) > MAX_SAFE) {
    throw new CanonicalJSONError("unsafe_number", `number ${clip(lit)} is an integer beyond ±2^53; send it as a string`);
  }
  // String(v) is the shortest decimal that reads back as v.
  if (decimalOf(lit) !== decimalOf(String(v))) {
    throw new CanonicalJSONError("inexact_number", `number ${clip(lit)} is not exactly the double it denotes (${String(v)}); send that, or a string`);
  }
  return v;
}

/**
 * A number's decimal value normalized to "sign digits e exponent" (value =
 * 0.digits × 10^exponent, no leading or trailing zeros; every zero is "0").
 * It only moves characters: no arithmetic a long exponent could inflate.
 */
function decimalOf(lit: string): string {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(lit);
  if (!m) throw new CanonicalJSONError("invalid", `bad number ${clip(lit)}`);
  const intPart = m[2]!;
  const digits = intPart + (m[3] ?? "");
  // Saturates far beyond any finite double; the literal's length is capped anyway.
  const exp = intPart.length + Math.max(-1e9, Math.min(1e9, Number(m[4] ?? "0")));
  const lead = digits.length - digits.replace(/^0+/, "").length;
  const trimmed = digits.slice(lead).replace(/0+$/, "");
  if (trimmed === "") return "0";
  return `${m[1] === "-" ? "-" : "+"}${trimmed}e${exp - lead}`;
}

function clip(s: string): string {
  return s.length <= 40 ? s : s.slice(0, 37) + "...";
}
