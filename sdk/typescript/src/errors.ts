/**
 * Errors thrown by the SDK. A denial is a result (ToolDenied), never an
 * error; errors are bad input, refused credentials, conflicts and transport
 * failures. Branch on `code`.
 */

/** What went wrong, as a stable code to branch on. */
export type ChioErrorCode =
  | "bad_request" // input refused, by this SDK or by chiod (400)
  | "unauthorized" // key, capability, proof or bearer not accepted (401)
  | "not_found" // no such call or approval (404)
  | "conflict" // request id reused for other content, token already presented, approval no longer pending (409)
  | "approval_rejected" // chiod refused a presented approval token (403)
  | "unavailable" // chiod could not decide (503 or another 5xx); nothing was allowed
  | "transport" // no HTTP answer at all (connection refused, reset, timed out)
  | "timed_out" // the wait ended before a decision; the call may still be pending
  | "declined" // a human denied an ask
  | "denied_by_policy" // a policy guard (not a human) denied a confirm or ask
  | "error"; // anything else (an unexpected answer from chiod)

export class ChioError extends Error {
  override name = "ChioError";
  /** What went wrong. */
  readonly code: ChioErrorCode;
  /** The HTTP status, when chiod answered. */
  readonly status: number | undefined;
  /** chiod's own error code (e.g. "replay_detected"), when it sent one. */
  readonly serverCode: string | undefined;

  constructor(code: ChioErrorCode, message: string, opts: { status?: number; serverCode?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.status = opts.status;
    this.serverCode = opts.serverCode;
  }
}

/** Why a value cannot be signed or hashed; the reasons of testdata/vectors/canonical.json. */
export type CanonicalRefusal = "invalid" | "duplicate_key" | "unsafe_number" | "inexact_number" | "number_range" | "too_deep";

/**
 * A value is not strict JSON, or a number is not exactly one double
 * (integral ones within ±2^53) (SPEC §2, §9). `code` is "bad_request".
 */
export class CanonicalJSONError extends ChioError {
  override name = "CanonicalJSONError";
  readonly reason: CanonicalRefusal;

  constructor(reason: CanonicalRefusal, message: string) {
    super("bad_request", `chio: ${message}`);
    this.reason = reason;
  }
}

const byServerCode: Record<string, ChioErrorCode> = {
  bad_request: "bad_request",
  unauthorized: "unauthorized",
  not_found: "not_found",
  conflict: "conflict",
  replay_detected: "conflict",
  approval_rejected: "approval_rejected",
  unavailable: "unavailable",
};

/** The error for one of chiod's error answers; a body that is not chiod's envelope is classified by status. */
export function apiError(status: number, serverCode: string | undefined, message: string): ChioError {
  let code = serverCode ? byServerCode[serverCode] : undefined;
  if (!code) {
    if (status >= 500 || status === 429) code = "unavailable";
    else if (status === 401) code = "unauthorized";
    else if (status === 404) code = "not_found";
    else code = "error";
  }
  const opts: { status: number; serverCode?: string } = { status };
  if (serverCode) opts.serverCode = serverCode;
  return new ChioError(code, `chio: ${serverCode ?? "http error"} (${status}): ${message}`, opts);
}

/** Whether asking again may give another answer: no answer at all, or chiod restarting, overloaded or behind a failing proxy. */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof ChioError)) return false;
  if (err.code === "transport") return true;
  return err.status !== undefined && (err.status >= 500 || err.status === 429);
}
