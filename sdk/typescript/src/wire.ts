/**
 * ChioClient's helpers at the wire: bounded reads of responses and files,
 * the caller's arguments, intent and tokens checked and put in the wire's
 * form before anything is sent, and waiting (signals, sleeps).
 */

import { isUtf8 } from "node:buffer";
import { readFileSync, statSync } from "node:fs";

import { RawJSON, canonicalize, parseStrict } from "./canon.js";
import { BadAnswerError, ChioError } from "./errors.js";
import type { Allowed, ToolDenied } from "./results.js";
import type { GovernedIntent } from "./types.js";

/** Untrusted input meets a limit first. */
export const MAX_RESPONSE_BYTES = 16 << 20;
export const MAX_TOKEN_BYTES = 64 << 10; // chiod's approval.MaxTokenBytes

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * Read a response body, refusing more than MAX_RESPONSE_BYTES. utf8 is
 * false when its bytes are not UTF-8 (text then holds U+FFFD in their
 * place): chiod's answers always are, so such a body is not chiod's (as the
 * Go and Python SDKs refuse it).
 */
export async function readBody(resp: Response): Promise<{ text: string; utf8: boolean }> {
  const declared = Number(resp.headers.get("content-length") ?? "0");
  if (declared > MAX_RESPONSE_BYTES || !resp.body) {
    await resp.body?.cancel();
    if (declared > MAX_RESPONSE_BYTES) throw new BadAnswerError(`chio: response larger than ${MAX_RESPONSE_BYTES} bytes`);
    return { text: "", utf8: true };
  }
  const chunks: Uint8Array[] = [];
  let n = 0;
  const reader = resp.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.byteLength;
    if (n > MAX_RESPONSE_BYTES) {
      await reader.cancel();
      throw new BadAnswerError(`chio: response larger than ${MAX_RESPONSE_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const body = Buffer.concat(chunks);
  return { text: body.toString("utf8"), utf8: isUtf8(body) };
}

export function readLimited(path: string, limit: number, what: string): Buffer {
  try {
    if (statSync(path).size > limit) throw new ChioError("bad_request", `chio: ${what} file ${path} is larger than ${limit} bytes`);
    return readFileSync(path);
  } catch (e) {
    if (e instanceof ChioError) throw e;
    throw new ChioError("bad_request", `chio: ${what} file: ${(e as Error).message}`);
  }
}

/** A caller's arguments: a JSON object, checked now so that a bad value fails before anything is sent. */
export function jsonObject(v: Record<string, unknown> | RawJSON, what: string): Record<string, unknown> {
  const value = v instanceof RawJSON ? v.value : v;
  if (!isObject(value)) throw new ChioError("bad_request", `chio: ${what} must be a JSON object`);
  canonicalize(value); // strict: throws CanonicalJSONError (code "bad_request")
  return value as Record<string, unknown>;
}

const INTENT_FIELDS: Record<string, string> = {
  purpose: "purpose",
  maxAmount: "max_amount",
  actionCategory: "action_category",
  context: "context",
};

/** The intent in the wire's snake_case; an unknown field is an error, not dropped. */
export function wireIntent(intent: GovernedIntent | RawJSON): Record<string, unknown> {
  if (intent instanceof RawJSON) return jsonObject(intent, "governedIntent");
  if (!isObject(intent)) throw new ChioError("bad_request", "chio: governedIntent must be an object");
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(intent)) {
    // Own members only: "constructor" or "__proto__" would find Object.prototype's.
    const wire = Object.hasOwn(INTENT_FIELDS, k) ? INTENT_FIELDS[k] : undefined;
    if (!wire) throw new ChioError("bad_request", `chio: governedIntent has no field ${JSON.stringify(k)} (fields: ${Object.keys(INTENT_FIELDS).join(", ")})`);
    if (v !== undefined) out[wire] = v;
  }
  canonicalize(out);
  return out;
}

/** A token's text to present, and the token parsed. Text and bytes are sent as given; an object in canonical form, the form it was signed in. */
export function tokenText(token: string | Uint8Array | Record<string, unknown>): { raw: string; token: Record<string, unknown> } {
  let raw: string;
  if (typeof token === "string") raw = token.trim();
  else if (token instanceof Uint8Array) raw = Buffer.from(token).toString("utf8").trim();
  else if (isObject(token)) raw = canonicalize(token);
  else throw new ChioError("bad_request", "chio: an approval token is a string, bytes or an object");
  if (Buffer.byteLength(raw) > MAX_TOKEN_BYTES) throw new ChioError("bad_request", `chio: approval token larger than ${MAX_TOKEN_BYTES} bytes`);
  const parsed = parseStrict(raw);
  if (!isObject(parsed)) throw new ChioError("bad_request", "chio: the token must be the signed JSON object");
  return { raw, token: parsed };
}

/** Turn a non-human ending of a confirm/ask into an error. */
export function hitlDenial(res: Allowed | ToolDenied): void {
  if (res.status === "allowed") {
    if (res.toolError) throw new ChioError("error", `chio: ${res.requestId}: ${res.toolError}`);
    return;
  }
  // Withdrawn before a human decided: neither a human's nor a policy's no.
  if (res.status === "cancelled") throw new ChioError("cancelled", `chio: ${res.requestId}: cancelled: ${res.reason}`);
  if (res.guard === "approval-timeout") throw new ChioError("timed_out", `chio: ${res.requestId}: ${res.reason}`);
  throw new ChioError("denied_by_policy", `chio: ${res.requestId}: ${res.status} by ${res.guard}: ${res.reason}`);
}

export function anySignal(a: AbortSignal, b: AbortSignal | undefined): AbortSignal;
export function anySignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined;
export function anySignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (!a) return b;
  if (!b) return a;
  return AbortSignal.any([a, b]);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(done, ms);
    function done(): void {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort(): void {
      clearTimeout(t);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", abort, { once: true });
  });
}
