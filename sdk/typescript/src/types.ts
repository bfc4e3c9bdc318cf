/**
 * What ChioClient takes and returns: its options, a tool call as an agent
 * describes it, waiting options, and an approver's respond answer.
 */

import type { PrivateKey } from "./keys.js";
import type { RawJSON } from "./canon.js";

export interface ClientOptions {
  /** chiod's URL (default http://127.0.0.1:7420). */
  url?: string;
  /** The agent key, or keyFile: a PKCS#8 PEM file. */
  key?: PrivateKey;
  keyFile?: string;
  /** The capability JSON exactly as issued, or capabilityFile: its file. */
  capability?: string | Uint8Array;
  capabilityFile?: string;
  /**
   * A reader or admin token. Agents do not need one (they read their own
   * calls with a Chio-Proof); it is never read from the environment, so an
   * agent does not run with an operator's token by accident.
   */
  bearer?: string;
  /** A fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
}

/** Money in minor units. */
export interface Amount {
  units: number;
  currency: string;
}

/** A governed intent (SPEC §3); sent as {purpose, max_amount, action_category, context}. */
export interface GovernedIntent {
  purpose: string;
  maxAmount?: Amount;
  actionCategory?: string;
  context?: Record<string, unknown>;
}

export interface ToolCall {
  server: string;
  tool: string;
  /** A JSON object, or RawJSON: JSON text (e.g. from an LLM) judged as written. Default {}. */
  arguments?: Record<string, unknown> | RawJSON;
  /** The intent; RawJSON is sent as given, in the wire's snake_case. */
  governedIntent?: GovernedIntent | RawJSON;
  /** Default "invoke". */
  operation?: string;
  /**
   * Makes the call idempotent across processes: the same id with the same
   * content gets the first call's outcome; other content is a "conflict"
   * error. Default "req-" + a UUIDv7; 1..128 characters of
   * [A-Za-z0-9._:-], not "." or "..", not starting with "ar-" (chiod's
   * rule; another is "bad_request" before anything is sent).
   */
  requestId?: string;
}

/** How long callTool may take: the whole call, its retries included. */
export interface CallOptions {
  /**
   * End the call after this long. It then throws a NotSentError (code
   * "unavailable") if no attempt can have reached chiod — every one failed
   * before its connection was ready, or was turned away by chiod — else
   * code "outcome_unknown" (it may have run). Default: no limit.
   */
  timeoutMs?: number;
  /** End the call when this signal aborts; reported as for timeoutMs, the reason as the cause. */
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** Give up after this long (TimedOut, code "timed_out"); default: no limit. */
  timeoutMs?: number;
  /** Abort the wait; the signal's reason is thrown. */
  signal?: AbortSignal;
}

export interface ResumeOptions extends WaitOptions {
  /**
   * The approver's signed token: its JSON text or bytes, the parsed object,
   * or a promise of one (e.g. resolved when your channel posts it back).
   */
  approvalToken: string | Uint8Array | Record<string, unknown> | PromiseLike<string | Uint8Array | Record<string, unknown>>;
  /** If given, the token must be for this approval request. */
  approvalRequestId?: string;
}

export interface HITLOptions extends WaitOptions {
  /** The server whose confirm/ask verb is used (default "demo"). */
  server?: string;
  /** Names the checkpoint: a restarted run asking again gets the first answer instead of asking twice. */
  requestId?: string;
}

/** POST /approvals/{id}/respond's answer. */
export interface RespondResult {
  approval_id: string;
  outcome: "approved" | "denied" | "pending" | string;
  resolved_at?: number;
  receipt_id?: string;
  approvals: number;
  quorum: number;
  call?: Record<string, unknown>;
}
