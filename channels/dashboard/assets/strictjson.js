// Strict JSON for what the approver types (amended arguments).
//
// JSON.parse is not what the kernel reads: it silently keeps the last of two
// members with the same name ({"amount":400, …, "amount":900} is 900) and
// rounds numbers it cannot hold (9007199254740993 becomes …992), so signing
// its result signs something other than what was typed. parseStrictJSON
// refuses, with a message saying why, whatever chio's canonical JSON
// refuses (internal/canon, mirrored from the TypeScript SDK's canon.ts):
// duplicate member names (also "a" vs "\u0061"), member names that differ
// only in letter case, integers beyond ±2^53 in any spelling, number
// literals that are not exactly the double they read as (so the number
// signed is the number typed), lone surrogates, nesting deeper than 64 and
// trailing data. What it returns re-encodes (jcs in signing.js) to exactly the
// value typed.
'use strict';

const STRICT_MAX_DEPTH = 64;
const STRICT_MAX_SAFE = 2 ** 53;
const STRICT_MAX_NUMBER_LEN = 100;
const STRICT_NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

class StrictJSONError extends Error {}

function parseStrictJSON(text) {
  const p = new StrictParser(text);
  p.ws();
  const v = p.value(0);
  p.ws();
  if (p.i !== text.length) p.fail('trailing data after the JSON value');
  return v;
}

class StrictParser {
  constructor(s) { this.s = s; this.i = 0; }

  fail(msg) { throw new StrictJSONError(`at character ${this.i}: ${msg}`); }

  ws() {
    for (;;) {
      const c = this.s.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.i++;
    }
  }

  value(depth) {
    const c = this.s[this.i];
    if (c === '{' || c === '[') {
      if (depth + 1 > STRICT_MAX_DEPTH) this.fail(`nested deeper than ${STRICT_MAX_DEPTH}`);
      return c === '{' ? this.object(depth + 1) : this.array(depth + 1);
    }
    if (c === '"') return this.string();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]]) {
      if (this.s.startsWith(word, this.i)) { this.i += word.length; return v; }
    }
    return this.fail(c === undefined ? 'unexpected end' : `unexpected ${JSON.stringify(c)}`);
  }

  object(depth) {
    const obj = {};
    const names = [];
    this.i++;
    this.ws();
    if (this.s[this.i] === '}') { this.i++; return obj; }
    for (;;) {
      if (this.s[this.i] !== '"') this.fail('expected a member name');
      const at = this.i;
      const k = this.string();
      if (Object.prototype.hasOwnProperty.call(obj, k)) {
        this.i = at;
        this.fail(`the member ${visibleName(k)} appears twice (JSON readers disagree about which one counts)`);
      }
      names.push(k);
      this.ws();
      if (this.s[this.i] !== ':') this.fail("expected ':'");
      this.i++;
      this.ws();
      // defineProperty: a member named "__proto__" is data, not a prototype.
      Object.defineProperty(obj, k, { value: this.value(depth), enumerable: true, writable: true, configurable: true });
      this.ws();
      const c = this.s[this.i++];
      if (c === '}') { checkMemberCase(names); return obj; }
      if (c !== ',') { this.i--; this.fail("expected ',' or '}'"); }
      this.ws();
    }
  }

  array(depth) {
    const arr = [];
    this.i++;
    this.ws();
    if (this.s[this.i] === ']') { this.i++; return arr; }
    for (;;) {
      arr.push(this.value(depth));
      this.ws();
      const c = this.s[this.i++];
      if (c === ']') return arr;
      if (c !== ',') { this.i--; this.fail("expected ',' or ']'"); }
      this.ws();
    }
  }

  string() {
    let out = '';
    this.i++; // the opening quote
    let from = this.i;
    for (;;) {
      const c = this.s.charCodeAt(this.i);
      if (Number.isNaN(c)) this.fail('unterminated string');
      if (c === 0x22) { out += this.s.slice(from, this.i++); return out; }
      if (c < 0x20) this.fail('a control character in a string must be escaped');
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = this.s.charCodeAt(this.i + 1);
        if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) this.fail('lone surrogate');
        this.i += 2;
        continue;
      }
      if (c !== 0x5c) { this.i++; continue; }
      out += this.s.slice(from, this.i) + this.escape();
      from = this.i;
    }
  }

  escape() {
    const e = this.s[this.i + 1];
    this.i += 2;
    switch (e) {
      case '"': return '"';
      case '\\': return '\\';
      case '/': return '/';
      case 'b': return '\b';
      case 'f': return '\f';
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case 'u': {
        const hi = this.hex4();
        if (hi < 0xd800 || hi > 0xdfff) return String.fromCharCode(hi);
        if (hi > 0xdbff || this.s[this.i] !== '\\' || this.s[this.i + 1] !== 'u') this.fail('lone surrogate');
        this.i += 2;
        const lo = this.hex4();
        if (lo < 0xdc00 || lo > 0xdfff) this.fail('lone surrogate');
        return String.fromCharCode(hi, lo);
      }
    }
    this.i -= 2;
    return this.fail('bad escape');
  }

  hex4() {
    const h = this.s.slice(this.i, this.i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) this.fail('bad \\u escape');
    this.i += 4;
    return parseInt(h, 16);
  }

  number() {
    STRICT_NUMBER.lastIndex = this.i;
    const m = STRICT_NUMBER.exec(this.s);
    if (!m) return this.fail('bad number');
    const at = this.i;
    this.i += m[0].length;
    try {
      return checkNumber(m[0]);
    } catch (e) {
      this.i = at;
      return this.fail(e.message);
    }
  }
}

// checkNumber: the literal must be exactly the double it reads as (the
// decimal of that double's shortest form, which is what is signed), and an
// integral value must lie within ±2^53. The same rule as chiod's
// internal/canon and the SDK's canon.ts.
function checkNumber(lit) {
  const clip = lit.length <= 40 ? lit : lit.slice(0, 37) + '...';
  if (lit.length > STRICT_MAX_NUMBER_LEN) throw new Error(`number literal longer than ${STRICT_MAX_NUMBER_LEN} characters`);
  if (!/[.eE]/.test(lit)) {
    const digits = lit.replace(/^-/, '');
    if (digits.length > 16 || BigInt(digits) > BigInt(STRICT_MAX_SAFE)) {
      throw new Error(`the integer ${clip} is beyond ±2^53 and would be signed as ${String(Number(lit))}; write it as a string`);
    }
    return Number(lit);
  }
  const v = Number(lit);
  if (!Number.isFinite(v)) throw new Error(`the number ${clip} is not a finite double`);
  if (Number.isInteger(v) && Math.abs(v) > STRICT_MAX_SAFE) {
    throw new Error(`the number ${clip} is an integer beyond ±2^53; write it as a string`);
  }
  if (decimalOf(lit) !== decimalOf(String(v))) {
    throw new Error(`the number ${clip} would be signed as ${String(v)}; write that, or a string`);
  }
  return v;
}

// decimalOf normalizes a number literal to "sign digits e exponent" (value
// = 0.digits × 10^exponent, no leading or trailing zeros; every zero is
// "0"), moving characters only.
function decimalOf(lit) {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(lit);
  if (!m) throw new Error(`bad number ${lit}`);
  const intPart = m[2];
  const digits = intPart + (m[3] || '');
  const exp = intPart.length + Math.max(-1e9, Math.min(1e9, Number(m[4] || '0')));
  const lead = digits.length - digits.replace(/^0+/, '').length;
  const trimmed = digits.slice(lead).replace(/0+$/, '');
  if (trimmed === '') return '0';
  return `${m[1] === '-' ? '-' : '+'}${trimmed}e${exp - lead}`;
}

// checkMemberCase refuses two member names of one object that differ only
// in letter case. chiod compares names under Unicode simple case folding
// (Go's strings.EqualFold); here each character is replaced by the upper
// case of its lower case, where both are one character (else by its lower
// case, else by itself). That equates every pair simple folding equates
// ("s"/"ſ", "k"/"K" (Kelvin), "σ"/"ς", "µ"/"μ", "ß"/"ẞ"; checked against
// the SDK's table of folding orbits) and a few more (such as "i"/"ı"):
// refusing a name chiod would accept only makes the approver rename it.
function checkMemberCase(names) {
  const seen = new Map();
  for (const n of names) {
    const key = foldKey(n);
    const prev = seen.get(key);
    if (prev !== undefined) {
      throw new StrictJSONError(`the members ${visibleName(prev)} and ${visibleName(n)} differ only in letter case (chio refuses such objects)`);
    }
    seen.set(key, n);
  }
}

function foldKey(name) {
  let out = '';
  for (const ch of name) {
    const one = (s) => Array.from(s).length === 1;
    const lower = ch.toLowerCase();
    if (!one(lower)) { out += ch; continue; }
    const upper = lower.toUpperCase();
    out += one(upper) ? upper : lower;
  }
  return out;
}

// A member name quoted with everything outside printable ASCII escaped,
// so that look-alikes show.
function visibleName(name) {
  return JSON.stringify(name).replace(/[^\x20-\x7e]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}
