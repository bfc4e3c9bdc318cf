/**
 * Approver tooling: sign a decision on an approval request (SPEC §3,
 * GovernedApprovalToken). The token is the credential: whoever presents it
 * (a channel, a workflow engine, ChioClient.resumeWithApproval) needs
 * nothing else. The kernel checks it against its own copy of the request,
 * so a tampered request only yields a token that is refused.
 */

import { RawJSON, canonicalize, parseStrict } from "./canon.js";
import { ChioError } from "./errors.js";
import type { PrivateKey } from "./keys.js";
import { newId, signObject } from "./signing.js";

export const TOKEN_DOMAIN = "chio.approval-token.v1";
/** Seconds: a token is meant to be presented now. */
export const DEFAULT_TOKEN_TTL = 600;
/** chiod refuses longer-lived tokens. */
export const MAX_APPROVAL_TTL = 3600;
const MAX_NOTE_BYTES = 2000;

/** A question of an ask (the `ask` verb's arguments). */
export interface Question {
  id: string;
  text: string;
  type: "text" | "single" | "multi";
  options?: string[];
  allow_other?: boolean;
}

/**
 * An approval request as chiod serves it (GET /approvals/{id} → request);
 * wire field names. Only the fields a token binds to are required here.
 */
export interface ApprovalRequest {
  approval_id: string;
  subject_id: string;
  parameter_hash: string;
  kind?: "tool_call" | "confirm" | "question";
  questions?: Question[];
  request_id?: string;
  summary?: string;
  expires_at?: number;
  status?: string;
  [field: string]: unknown;
}

export interface TokenOptions {
  /** Seconds the token stays presentable (default 600, at most 3600). */
  ttlSeconds?: number;
  /** For reproducible tests only: the signing time (unix seconds) and token id. */
  issuedAt?: number;
  tokenId?: string;
}

export interface ApprovalOptions extends TokenOptions {
  /** A note for the agent and the receipt, signed. */
  note?: string;
  /** Approve an edited call: these arguments replace the call's. */
  amendedArguments?: Record<string, unknown> | RawJSON;
  /** Answers to a question request: {questionId: "answer" or ["choice", …]}. */
  answers?: Record<string, string | string[]>;
}

/** Sign an approval of request; returns the token text to present. */
export function signApproval(request: ApprovalRequest, key: PrivateKey, opts: ApprovalOptions = {}): string {
  const extra: Record<string, unknown> = {};
  if (opts.amendedArguments !== undefined) {
    const a = opts.amendedArguments instanceof RawJSON ? opts.amendedArguments.value : opts.amendedArguments;
    if (a === null || typeof a !== "object" || Array.isArray(a)) throw new ChioError("bad_request", "chio: amended arguments must be a JSON object");
    extra["amended_arguments"] = a;
  }
  if (opts.answers !== undefined) extra["answers"] = shapeAnswers(request, opts.answers);
  return sign(request, key, "approved", opts.note, extra, opts);
}

/** Sign a denial of request; reason is signed as the note, shown to the agent and kept in the receipt. */
export function signDenial(request: ApprovalRequest, key: PrivateKey, reason: string, opts: TokenOptions = {}): string {
  if (!reason || !reason.trim()) throw new ChioError("bad_request", "chio: a denial needs a reason");
  return sign(request, key, "denied", reason, {}, opts);
}

function sign(
  request: ApprovalRequest,
  key: PrivateKey,
  decision: "approved" | "denied",
  note: string | undefined,
  extra: Record<string, unknown>,
  opts: TokenOptions,
): string {
  for (const f of ["approval_id", "subject_id", "parameter_hash"] as const) {
    if (typeof request[f] !== "string" || !request[f]) throw new ChioError("bad_request", `chio: the approval request has no ${f}`);
  }
  const ttl = opts.ttlSeconds ?? DEFAULT_TOKEN_TTL;
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > MAX_APPROVAL_TTL) {
    throw new ChioError("bad_request", `chio: token ttl must be 1..${MAX_APPROVAL_TTL} seconds`);
  }
  if (note && Buffer.byteLength(note, "utf8") > MAX_NOTE_BYTES) throw new ChioError("bad_request", `chio: note longer than ${MAX_NOTE_BYTES} bytes`);
  const now = opts.issuedAt ?? Math.floor(Date.now() / 1000);
  const token: Record<string, unknown> = {
    schema: TOKEN_DOMAIN,
    id: opts.tokenId ?? newId("at-"),
    approver: key.publicKey,
    subject: request.subject_id,
    governed_intent_hash: request.parameter_hash,
    request_id: request.approval_id, // a token binds to the approval request
    issued_at: now,
    expires_at: now + ttl,
    decision,
    ...(note ? { note } : {}),
    ...extra,
  };
  return signObject(key, TOKEN_DOMAIN, token);
}

/**
 * Answers as the kernel wants them: a string for text and single questions,
 * a list for multi; checked against the questions now, so an approver learns
 * of a mistake before the kernel refuses the token.
 */
function shapeAnswers(request: ApprovalRequest, answers: Record<string, string | string[]>): Record<string, string | string[]> {
  let questions: unknown = request.questions;
  if (typeof questions === "string") questions = parseStrict(questions);
  if (request.kind !== "question" || !Array.isArray(questions)) {
    throw new ChioError("bad_request", `chio: ${request.approval_id} is not a question request`);
  }
  const byId = new Map<string, Question>();
  for (const q of questions as Question[]) byId.set(q.id, q);
  const out: Record<string, string | string[]> = Object.create(null); // a question may be named "__proto__"
  for (const [id, given] of Object.entries(answers)) {
    const q = byId.get(id);
    if (!q) throw new ChioError("bad_request", `chio: no question ${JSON.stringify(id)}`);
    const picks = typeof given === "string" ? [given] : [...given];
    if (!picks.every((p) => typeof p === "string")) throw new ChioError("bad_request", `chio: answers to ${JSON.stringify(id)} must be strings`);
    if (q.type === "multi") out[id] = picks;
    else if (picks.length === 1) out[id] = picks[0]!;
    else throw new ChioError("bad_request", `chio: question ${JSON.stringify(id)} takes exactly one answer`);
  }
  const missing = [...byId.keys()].filter((id) => !(id in out));
  if (missing.length) throw new ChioError("bad_request", `chio: no answer to ${missing.map((m) => JSON.stringify(m)).join(", ")}`);
  canonicalize(out); // strict JSON now, not at signing
  return out;
}
