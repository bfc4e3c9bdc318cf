/**
 * What an agent and an approver sign (SPEC §2, §3; the Chio-Proof read and
 * cancel headers of docs/ARCHITECTURE.md). testdata/vectors pins every byte of it.
 *
 * Every signature is Ed25519 over DOMAIN || 0x00 || JCS(object without
 * "signature"). The functions here build exactly those bytes; nothing
 * signed is re-serialized afterwards.
 */

import { createHash, randomBytes } from "node:crypto";

import { canonicalBytes, canonicalize } from "./canon.js";
import { ChioError } from "./errors.js";
import type { PrivateKey } from "./keys.js";

export const CALL_PROOF_DOMAIN = "chio.call.v1";
export const STATUS_PROOF_DOMAIN = "chio.call-status.v1";
export const CANCEL_PROOF_DOMAIN = "chio.cancel.v1";
export const STATUS_PROOF_HEADER = "Chio-Proof";

/** The exact bytes signed under domain. */
export function message(domain: string, canonical: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(domain, "utf8"), Buffer.of(0), canonical]);
}

/**
 * SHA-256 hex of JCS({server_id, tool_name, arguments, governed_intent}),
 * governed_intent null when absent: what an approval binds to. The intent
 * is in its wire form (snake_case).
 */
export function parameterHash(server: string, tool: string, args: unknown, governedIntent: unknown): string {
  const pre = canonicalBytes({ server_id: server, tool_name: tool, arguments: args, governed_intent: governedIntent ?? null });
  return createHash("sha256").update(pre).digest("hex");
}

/** The fields a call proof covers. */
export interface ProofFields {
  requestId: string;
  capabilityId: string;
  server: string;
  tool: string;
  parameterHash: string;
  issuedAt: number; // unix seconds
}

/** A call's proof member, {issued_at, signature}. */
export function callProof(key: PrivateKey, f: ProofFields): { issued_at: number; signature: string } {
  checkTime(f.issuedAt);
  const payload = canonicalBytes({
    request_id: f.requestId,
    capability_id: f.capabilityId,
    server: f.server,
    tool: f.tool,
    parameter_hash: f.parameterHash,
    issued_at: f.issuedAt,
  });
  return { issued_at: f.issuedAt, signature: key.sign(message(CALL_PROOF_DOMAIN, payload)).toString("hex") };
}

/**
 * The Chio-Proof header with which an agent reads its own call or approval:
 * "<issued_at>.<hex signature>" over JCS({request_id: id, issued_at}).
 */
export function statusProof(key: PrivateKey, id: string, issuedAt: number = Math.floor(Date.now() / 1000)): string {
  checkTime(issuedAt);
  if (issuedAt < 0) throw new ChioError("bad_request", "chio: issued_at must not be negative");
  const payload = canonicalBytes({ request_id: id, issued_at: issuedAt });
  return `${issuedAt}.${key.sign(message(STATUS_PROOF_DOMAIN, payload)).toString("hex")}`;
}

/**
 * The Chio-Proof header with which an agent cancels its own parked call:
 * "<issued_at>.<hex signature>" over JCS({approval_id, issued_at, reason})
 * in its own domain, so a read proof (which may be seen in logs) cannot
 * cancel. reason is signed exactly as it is sent.
 */
export function cancelProof(key: PrivateKey, approvalId: string, reason: string, issuedAt: number = Math.floor(Date.now() / 1000)): string {
  checkTime(issuedAt);
  if (issuedAt < 0) throw new ChioError("bad_request", "chio: issued_at must not be negative");
  const payload = canonicalBytes({ approval_id: approvalId, issued_at: issuedAt, reason });
  return `${issuedAt}.${key.sign(message(CANCEL_PROOF_DOMAIN, payload)).toString("hex")}`;
}

/** Sign obj under domain: the canonical object with its "signature" member, exactly the text to send. */
export function signObject(key: PrivateKey, domain: string, obj: Record<string, unknown>): string {
  if ("signature" in obj) throw new ChioError("bad_request", "chio: the object already has a signature member");
  if ("schema" in obj && obj["schema"] !== domain) {
    throw new ChioError("bad_request", `chio: schema ${JSON.stringify(obj["schema"])} does not match the signature domain ${domain}`);
  }
  const signature = key.sign(message(domain, canonicalBytes(obj))).toString("hex");
  // JCS of the object plus its signature is the payload with the member spliced in at its sorted place.
  return canonicalize({ ...obj, signature });
}

/** prefix + a UUIDv7 (RFC 9562): time-ordered, as chiod's ids. */
export function newId(prefix: string): string {
  const b = randomBytes(16);
  b.writeUIntBE(Date.now(), 0, 6);
  b[6] = 0x70 | (b[6]! & 0x0f); // version 7
  b[8] = 0x80 | (b[8]! & 0x3f); // variant 10
  const h = b.toString("hex");
  return `${prefix}${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function checkTime(t: number): void {
  if (!Number.isSafeInteger(t)) throw new ChioError("bad_request", "chio: a time must be integer unix seconds");
}
