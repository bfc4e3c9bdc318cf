// chio dashboard: what the page signs and how (loaded before app.js). The
// approver's private key is a non-extractable WebCrypto key in IndexedDB;
// it signs here and is never sent anywhere.
'use strict';

const TOKEN_DOMAIN = 'chio.approval-token.v1';
const SESSION_DOMAIN = 'chio.session.v1';
const TOKEN_TTL = 600; // seconds; the kernel caps tokens at 3600
const NOTE_MAX_BYTES = 2000; // approval.MaxNoteLen: bytes of UTF-8, not characters

// noteRefusal says why chio would refuse note ('' when it would not): it
// counts bytes of UTF-8, so 1001 "é" are too many, and chiod's own answer
// ("malformed approval token: schema, id, decision or note") tells the
// approver nothing they can act on.
function noteRefusal(note) {
  const n = new TextEncoder().encode(note).length;
  return n > NOTE_MAX_BYTES ? `The note is ${n} bytes of UTF-8; chio takes at most ${NOTE_MAX_BYTES}: shorten it.` : '';
}

// TOKEN_MAX_BYTES is approval.MaxTokenBytes: chiod refuses a larger token
// before reading it. Each answer and the note are held to their own limits,
// but answers to many questions, or amended arguments, can together make a
// token over it, which chiod would refuse only after it was signed.
const TOKEN_MAX_BYTES = 64 << 10;

// tokenRefusal says why chio would refuse the unsigned token tok for its
// size ('' when it would not), counting the signature it is about to get.
function tokenRefusal(tok) {
  const n = enc.encode(jcs({ ...tok, signature: '0'.repeat(128) })).length;
  return n > TOKEN_MAX_BYTES ? `The signed decision would be ${n} bytes; chio takes at most ${TOKEN_MAX_BYTES}: shorten the answers, the amended arguments or the note. Nothing was signed.` : '';
}

// ---------------------------------------------------------------------------
// RFC 8785 (JCS). Object members sorted by UTF-16 code units (what
// Array.prototype.sort does by default), strings and numbers written by
// JSON.stringify: ECMAScript's Number-to-String is exactly RFC 8785's number
// form, and JSON.stringify escapes exactly what RFC 8785 requires. That is
// sufficient for the objects signed here (tokens, session proofs), whose
// integers are far below 2^53; the server re-checks every byte it receives.
// ---------------------------------------------------------------------------
function jcs(v) {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('JCS: non-finite number');
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return '[' + v.map(jcs).join(',') + ']';
  if (typeof v === 'object') {
    const names = Object.keys(v).filter((k) => v[k] !== undefined).sort();
    return '{' + names.map((k) => JSON.stringify(k) + ':' + jcs(v[k])).join(',') + '}';
  }
  throw new Error('JCS: unsupported value');
}

const enc = new TextEncoder();
const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

function signedMessage(domain, canonical) {
  const d = enc.encode(domain), c = enc.encode(canonical);
  const m = new Uint8Array(d.length + 1 + c.length);
  m.set(d, 0); m[d.length] = 0; m.set(c, d.length + 1);
  return m;
}

// UUIDv7: 48-bit unix ms, version 7, variant 10, random rest.
function uuidv7() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  let ms = Date.now();
  for (let i = 5; i >= 0; i--) { b[i] = ms % 256; ms = Math.floor(ms / 256); }
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = hex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// ---------------------------------------------------------------------------
// Key storage: IndexedDB holds {privateKey: CryptoKey (non-extractable),
// publicKey: "ed25519:<hex>"}.
// ---------------------------------------------------------------------------
const DB_NAME = 'chio-dashboard', STORE = 'keys', SLOT = 'approver';

function db() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function idb(mode, fn) {
  const d = await db();
  return new Promise((resolve, reject) => {
    const tx = d.transaction(STORE, mode);
    const r = fn(tx.objectStore(STORE));
    tx.oncomplete = () => { d.close(); resolve(r && r.result); };
    tx.onerror = () => { d.close(); reject(tx.error); };
  });
}

const loadKey = () => idb('readonly', (s) => s.get(SLOT));
const saveKey = (k) => idb('readwrite', (s) => s.put(k, SLOT));
const forgetKey = () => idb('readwrite', (s) => s.delete(SLOT));

function pemToDer(pem) {
  const m = /-----BEGIN PRIVATE KEY-----([\s\S]*?)-----END PRIVATE KEY-----/.exec(pem);
  if (!m) throw new Error('not a PKCS#8 PEM file (expected "-----BEGIN PRIVATE KEY-----")');
  const bin = atob(m[1].replace(/\s+/g, ''));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function b64urlToHex(s) {
  const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  return hex(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

// importPem reads the public key once through a throw-away extractable
// import (WebCrypto cannot derive it from a non-extractable key), then keeps
// only a non-extractable copy.
async function importPem(pem) {
  const der = pemToDer(pem);
  const alg = { name: 'Ed25519' };
  let tmp;
  try {
    tmp = await crypto.subtle.importKey('pkcs8', der, alg, true, ['sign']);
  } catch (e) {
    throw new Error('this file is not an Ed25519 PKCS#8 key (' + (e.message || e.name) + ')');
  }
  const jwk = await crypto.subtle.exportKey('jwk', tmp);
  const privateKey = await crypto.subtle.importKey('pkcs8', der, alg, false, ['sign']);
  const k = { privateKey, publicKey: 'ed25519:' + b64urlToHex(jwk.x), created: Date.now() };
  await saveKey(k);
  return k;
}

async function generateKey() {
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
  const raw = await crypto.subtle.exportKey('raw', pair.publicKey);
  const k = { privateKey: pair.privateKey, publicKey: 'ed25519:' + hex(raw), created: Date.now(), generated: true };
  await saveKey(k);
  return k;
}

async function sign(domain, obj) {
  const sig = await crypto.subtle.sign({ name: 'Ed25519' }, state.key.privateKey, signedMessage(domain, jcs(obj)));
  return hex(sig);
}
