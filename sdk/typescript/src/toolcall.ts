/**
 * For tool servers behind chio: tell chio's calls from anyone else's.
 *
 * chiod signs every call it sends to an http tool server with its kernel
 * key (docs/platform.md, "Only chio's calls should run"):
 *
 *   X-Chio-Server:    the [[servers]] id the call was routed to
 *   X-Chio-Sent-At:   unix milliseconds on chiod's clock (per attempt), as
 *       the decimal signed: no "+", leading zero or space, not "-0"
 *   X-Chio-Signature: 128 lowercase hex = Ed25519(kernel key,
 *       "chio.tool-call.v1" || 0x00 || server || "\n" || sent_at || "\n" || hex(SHA-256(body)))
 *
 * A tool server that anything but chiod can reach calls verifyToolCall on
 * every request, with the exact body bytes, before it runs anything.
 * testdata/vectors/tool_call.json pins the format (Go's
 * toolserver.Verifier and Python's chio.verify_tool_call are the same check).
 */

import { createHash, createPublicKey, verify } from "node:crypto";

import { ChioError } from "./errors.js";
import { publicKeyBytes } from "./keys.js";

export const TOOL_CALL_DOMAIN = "chio.tool-call.v1";
/** How far X-Chio-Sent-At may be from the tool server's clock, either way. */
export const DEFAULT_TOOL_CALL_MAX_AGE_MS = 5 * 60 * 1000;
/** chio's arguments are at most 256 KiB; a larger body is not chio's call. */
export const MAX_TOOL_CALL_BODY = 1 << 20;
/** SPKI DER of an Ed25519 public key is this prefix and the 32-byte key (RFC 8410). */
const SPKI_ED25519_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** What the kernel signs (after the domain and a 0x00 byte); sentAtMs as a bigint is exact beyond 2^53. */
export function toolCallMessage(server: string, sentAtMs: number | bigint, body: Uint8Array): Buffer {
  const sum = createHash("sha256").update(body).digest("hex");
  return Buffer.from(`${server}\n${sentAtMs}\n${sum}`, "utf8");
}

export interface VerifyToolCallOptions {
  /** The clock, in unix milliseconds (default Date.now()); a finite number. */
  nowMs?: number;
  /** Default DEFAULT_TOOL_CALL_MAX_AGE_MS; a positive, finite number. */
  maxAgeMs?: number;
}

function refuse(why: string): never {
  throw new ChioError("unauthorized", `chio: not a call chio sent to this tool server: ${why}`);
}

/**
 * Throws ChioError("unauthorized") unless chio's kernel (kernelKey,
 * "ed25519:<hex>", as chiod's GET /healthz names it) sent this call to
 * serverId (this server's [[servers]] id) within maxAgeMs. headers is a
 * lookup by lower-case name (Node's IncomingMessage.headers is one); body
 * is the request body exactly as received; its Idempotency-Key header must
 * be the body's request_id. A call repeated within the window is the same
 * call (same Idempotency-Key): deduplicate it. A kernelKey, serverId,
 * nowMs or maxAgeMs that is not one throws ChioError("bad_request").
 */
export function verifyToolCall(
  headers: Record<string, string | string[] | undefined>,
  body: Uint8Array,
  kernelKey: string,
  serverId: string,
  opts: VerifyToolCallOptions = {},
): void {
  let rawKey: Buffer;
  try {
    rawKey = publicKeyBytes(kernelKey);
  } catch (e) {
    throw new ChioError("bad_request", `chio: kernelKey ${(e as Error).message}`);
  }
  if (!serverId) throw new ChioError("bad_request", "chio: serverId is required");
  // A NaN clock or window compares false with every skew, and an infinite
  // window is no bound: either would turn the freshness check off.
  const nowMs = opts.nowMs ?? Date.now();
  const maxAge = opts.maxAgeMs ?? DEFAULT_TOOL_CALL_MAX_AGE_MS;
  if (typeof nowMs !== "number" || !Number.isFinite(nowMs)) throw new ChioError("bad_request", `chio: nowMs ${String(nowMs)} must be a finite unix time in milliseconds`);
  if (typeof maxAge !== "number" || !Number.isFinite(maxAge) || !(maxAge > 0)) {
    throw new ChioError("bad_request", `chio: maxAgeMs ${String(maxAge)} must be a positive, finite number of milliseconds`);
  }
  if (body.length > MAX_TOOL_CALL_BODY) refuse(`a body larger than ${MAX_TOOL_CALL_BODY} bytes`);
  const one = (name: string): string => {
    const v = headers[name];
    return typeof v === "string" ? v : "";
  };
  const server = one("x-chio-server");
  if (server !== serverId) refuse(`X-Chio-Server is ${JSON.stringify(server.slice(0, 64))}, want ${JSON.stringify(serverId)}`);
  // Exactly the decimal chiod signs (Go's strconv.FormatInt of an int64),
  // as Go and Python: not "05" or "-0" (testdata/sdk/tool_call_sent_at.json).
  const sent = one("x-chio-sent-at");
  const sentAt = /^-?[0-9]{1,19}$/.test(sent) ? BigInt(sent) : undefined;
  if (sentAt === undefined || String(sentAt) !== sent || sentAt < -(2n ** 63n) || sentAt >= 2n ** 63n) refuse("X-Chio-Sent-At must be unix milliseconds");
  const sig = one("x-chio-signature");
  if (!/^[0-9a-f]{128}$/.test(sig)) refuse("X-Chio-Signature must be 128 lowercase hex digits");
  const pub = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, rawKey]), format: "der", type: "spki" });
  const msg = Buffer.concat([Buffer.from(TOOL_CALL_DOMAIN + "\0", "utf8"), toolCallMessage(serverId, sentAt, body)]);
  if (!verify(null, msg, pub, Buffer.from(sig, "hex"))) refuse(`the signature does not verify under ${kernelKey}`);
  // The signature covers the body, not the Idempotency-Key header a
  // deduplicating server keys on: a captured call re-sent within the window
  // under another key would run again. chiod sends the call's request id as
  // both, so the key must be the body's signed request_id.
  let call: unknown;
  try {
    call = JSON.parse(Buffer.from(body).toString("utf8"));
  } catch {
    call = undefined;
  }
  const requestId = typeof call === "object" && call !== null && !Array.isArray(call) ? (call as { request_id?: unknown }).request_id : undefined;
  if (typeof requestId !== "string") refuse("the body is not a call with a request_id");
  const key = one("idempotency-key");
  if (key !== requestId) refuse(`Idempotency-Key is ${JSON.stringify(key.slice(0, 64))}, not the signed request_id ${JSON.stringify(requestId.slice(0, 64))}`);
  // Freshness after the signature: an unsigned time says nothing.
  const skew = nowMs - Number(sentAt);
  if (Math.abs(skew) > maxAge) refuse(`sent ${Math.round(skew / 1000)}s from this server's clock, more than ${Math.round(maxAge / 1000)}s`);
}
