/** Ed25519 keys (SPEC §2): PKCS#8 PEM files and the "ed25519:<hex>" text form of public keys. */

import { createPrivateKey, createPublicKey, sign, type KeyObject } from "node:crypto";
import { readFileSync, statSync } from "node:fs";

import { ChioError } from "./errors.js";

/** A PEM key file is ~120 bytes; anything much larger is not one. */
const MAX_KEY_FILE_BYTES = 64 << 10;
/** PKCS#8 DER of an Ed25519 key is this prefix and the 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

// Ed25519's field prime and curve constant d = -121665/121666 (RFC 8032).
const P = 2n ** 255n - 19n;
const modP = (n: bigint): bigint => ((n % P) + P) % P;
function powP(b: bigint, e: bigint): bigint {
  let r = 1n;
  for (b = modP(b); e > 0n; e >>= 1n, b = (b * b) % P) if (e & 1n) r = (r * b) % P;
  return r;
}
const D = modP(-121665n * powP(121666n, P - 2n));
// The y coordinates of the eight points of small order: the identity (1),
// the point of order 2 (-1), those of order 4 (0) and of order 8 (±y8).
const Y8 = 0x7a03ac9277fdc74ec6cc392cfa53202a0f67100d760b3cba4fd84d3d706a17c7n;
const SMALL_ORDER_Y = new Set([1n, P - 1n, 0n, Y8, P - Y8]);
// ℓ, the order of the base point B: every real key aB is in the subgroup of
// order ℓ. A point A+T (T of small order) is not: [ℓ](A+T) = [ℓ]T ≠ identity.
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
// A square root of -1 mod p (RFC 8032 §5.1.3, step 3).
const SQRT_M1 = powP(2n, (P - 1n) / 4n);

/**
 * The raw 32 bytes of a public key in text form ("ed25519:" + 64 lowercase
 * hex). Throws unless it is a canonical encoding of a curve point not of
 * small order (SPEC §2, as the Go implementation's keys.ParsePublicKey): the
 * identity key, for one, verifies a forged signature of every message under
 * OpenSSL's check. Refused too, as Go refuses it (keys.ErrTorsionKey): a
 * point with a torsion component, A+T (T of small order), which no Ed25519
 * key generator makes and for which A's private key also signs
 * (cofactorless, whenever [k]T is the identity): one private key would pass
 * as two keys. The message says why, to follow the key's name.
 */
export function publicKeyBytes(text: string): Buffer {
  if (typeof text !== "string" || !/^ed25519:[0-9a-f]{64}$/.test(text)) throw new Error("must be ed25519:<64 lowercase hex>");
  const raw = Buffer.from(text.slice(8), "hex");
  const n = BigInt("0x" + Buffer.from(raw).reverse().toString("hex")); // little-endian
  const y = n & ((1n << 255n) - 1n);
  const negative = n >> 255n === 1n;
  if (y >= P) throw new Error("is a non-canonical encoding (y ≥ p)");
  // x² = (y² - 1) / (d·y² + 1) must have a square root; x = 0 has no sign.
  const xx = modP((y * y - 1n) * powP(D * y * y + 1n, P - 2n));
  if (xx === 0n && negative) throw new Error("is a non-canonical encoding (x = 0 with the sign bit set)");
  if (xx !== 0n && powP(xx, (P - 1n) / 2n) !== 1n) throw new Error("is not a point of the curve");
  if (SMALL_ORDER_Y.has(y)) throw new Error("is a weak key (a point of small order)");
  if (!inPrimeOrderSubgroup(text, y, negative, xx)) {
    throw new Error(
      "is a weak key (it has a torsion component: A+T with T of small order, not in the prime-order subgroup; " +
        "no Ed25519 key generator makes such a key, and the private key of A also signs for it)",
    );
  }
  return raw;
}

/** Verdicts of inPrimeOrderSubgroup by key text: a tool server passes its one pinned kernel key on every call. */
const subgroupVerdicts = new Map<string, boolean>();

/**
 * Whether [ℓ]A is the identity, A the curve point (x, y) with x² = xx and
 * the given sign, as publicKeyBytes has decoded it. A scalar multiplication:
 * cached per key (at most 64).
 */
function inPrimeOrderSubgroup(text: string, y: bigint, negative: boolean, xx: bigint): boolean {
  const cached = subgroupVerdicts.get(text);
  if (cached !== undefined) return cached;
  // Decompression (RFC 8032 §5.1.3): the candidate root (u/v)^((p+3)/8) of
  // x² = u/v is x or x/√-1; the sign bit picks x or p - x.
  let x = powP(xx, (P + 3n) / 8n);
  if ((x * x) % P !== xx) x = (x * SQRT_M1) % P;
  if ((x * x) % P !== xx) throw new Error("is not a point of the curve"); // publicKeyBytes refused it already
  if (((x & 1n) === 1n) !== negative) x = P - x;
  // [ℓ]A by double-and-add, in extended coordinates (X:Y:Z:T), x = X/Z,
  // y = Y/Z, x·y = T/Z; the identity is (0:1:1:0).
  const a: Point = [x, y, 1n, (x * y) % P];
  let q: Point = [0n, 1n, 1n, 0n];
  for (const bit of L.toString(2)) {
    q = add(q, q);
    if (bit === "1") q = add(q, a);
  }
  const verdict = q[0] === 0n && q[1] === q[2];
  if (subgroupVerdicts.size >= 64) subgroupVerdicts.clear();
  subgroupVerdicts.set(text, verdict);
  return verdict;
}

type Point = [bigint, bigint, bigint, bigint];

/** Point addition on edwards25519 in extended coordinates (RFC 8032 §5.1.4); complete, so it doubles too. */
function add([x1, y1, z1, t1]: Point, [x2, y2, z2, t2]: Point): Point {
  const a = modP((y1 - x1) * (y2 - x2));
  const b = modP((y1 + x1) * (y2 + x2));
  const c = modP(2n * D * t1 * t2);
  const d = modP(2n * z1 * z2);
  const [e, f, g, h] = [b - a, d - c, d + c, b + a];
  return [modP(e * f), modP(g * h), modP(f * g), modP(e * h)];
}

/** An agent's or approver's Ed25519 signing key. It prints as its public key only. */
export class PrivateKey {
  readonly #key: KeyObject;
  /** Text form of the public key, "ed25519:" + 64 hex. */
  readonly publicKey: string;

  private constructor(key: KeyObject) {
    if (key.asymmetricKeyType !== "ed25519") throw new ChioError("bad_request", "chio: the private key is not Ed25519");
    this.#key = key;
    const jwk = createPublicKey(key).export({ format: "jwk" });
    this.publicKey = "ed25519:" + Buffer.from(jwk.x ?? "", "base64url").toString("hex");
  }

  /** Decode a PKCS#8 PEM Ed25519 private key (`chio keygen` writes one). */
  static fromPEM(pem: string | Uint8Array): PrivateKey {
    const text = typeof pem === "string" ? pem : Buffer.from(pem).toString("latin1");
    if (!text.includes("-----BEGIN PRIVATE KEY-----")) throw new ChioError("bad_request", "chio: no PKCS#8 PRIVATE KEY PEM block");
    try {
      return new PrivateKey(createPrivateKey({ key: text, format: "pem" }));
    } catch (e) {
      if (e instanceof ChioError) throw e;
      throw new ChioError("bad_request", `chio: bad private key: ${(e as Error).message}`);
    }
  }

  /** The key for a 32-byte seed (tests; deterministic). */
  static fromSeed(seed: Uint8Array): PrivateKey {
    if (seed.length !== 32) throw new ChioError("bad_request", "chio: an Ed25519 seed is 32 bytes");
    const der = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
    return new PrivateKey(createPrivateKey({ key: der, format: "der", type: "pkcs8" }));
  }

  /** Read a PKCS#8 PEM key file. */
  static load(path: string): PrivateKey {
    let data: Buffer;
    try {
      if (statSync(path).size > MAX_KEY_FILE_BYTES) throw new ChioError("bad_request", `chio: key file ${path} is larger than ${MAX_KEY_FILE_BYTES} bytes`);
      data = readFileSync(path);
    } catch (e) {
      if (e instanceof ChioError) throw e;
      throw new ChioError("bad_request", `chio: key file: ${(e as Error).message}`);
    }
    const key = PrivateKey.fromPEM(data);
    warnIfOpenToOthers(path, key.publicKey);
    return key;
  }

  /** The raw 64-byte Ed25519 signature of message (callers sign domain-separated messages). */
  sign(message: Uint8Array): Buffer {
    return sign(null, message, this.#key);
  }

  toString(): string {
    return `PrivateKey(${this.publicKey})`;
  }

  toJSON(): string {
    return this.toString();
  }
}

/**
 * Emit a warning (code CHIO_KEY_FILE_MODE) when group or others may read or
 * write the key file at path (any bit of 0o077): whoever reads it signs as
 * its holder. A warning, not a refusal: keys are copied between machines
 * whose modes the SDK does not control, and the repository's demo keys
 * check out 0644. On Windows modes say nothing (access is by ACL).
 */
function warnIfOpenToOthers(path: string, publicKey: string): void {
  if (process.platform === "win32") return;
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    return;
  }
  if ((mode & 0o077) !== 0) {
    process.emitWarning(
      `chio: key file ${path} has mode 0${mode.toString(8)}: other users may read it and sign as ${publicKey}; run \`chmod 600 ${path}\``,
      { code: "CHIO_KEY_FILE_MODE" },
    );
  }
}
