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
  | "unavailable" // chiod itself could not decide (its 503 "unavailable" envelope, or a 429), or callTool could not connect to it at all (NotSentError); nothing was allowed
  | "outcome_unknown" // the answer was lost after the request may have reached chiod: a call MAY HAVE RUN; retry it with the same requestId or await it
  | "vote_recorded" // respond: the approver's vote IS recorded, but the approved call is not finished yet (VoteRecordedError); do not vote again
  | "vote_uncertain" // respond: the vote MAY OR MAY NOT be recorded (VoteUncertainError); present the same token again, do not ask another approver
  | "transport" // no complete HTTP answer (connection refused, reset, timed out); callTool reports it as "outcome_unknown", or as NotSentError when no attempt could connect
  | "timed_out" // the wait ended before a decision; the call may still be pending
  | "declined" // a human denied an ask
  | "denied_by_policy" // a policy guard (not a human) denied a confirm or ask
  | "cancelled" // a confirm or ask was withdrawn (by the agent or an operator) before a human decided
  | "error"; // anything else (an unexpected answer from chiod)

export class ChioError extends Error {
  override name = "ChioError";
  /** What went wrong. */
  readonly code: ChioErrorCode;
  /** The HTTP status, when chiod answered. */
  readonly status: number | undefined;
  /** chiod's own error code (e.g. "replay_detected"), when it sent one. */
  readonly serverCode: string | undefined;
  /**
   * The call's request id, on "outcome_unknown" from callTool: the call may
   * have run, so retry it with this same requestId (the tool runs at most
   * once) or awaitApproval(requestId); never submit it under a new id.
   */
  readonly requestId: string | undefined;
  /**
   * The answer's Retry-After in milliseconds (0 if none): chiod turned the
   * request away until a share frees up. The SDK's own retries wait at
   * least this long, or end at once if the deadline is nearer.
   */
  readonly retryAfterMs: number;

  constructor(
    code: ChioErrorCode,
    message: string,
    opts: { status?: number; serverCode?: string; requestId?: string; cause?: unknown; retryAfterMs?: number } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.status = opts.status;
    this.serverCode = opts.serverCode;
    this.requestId = opts.requestId;
    this.retryAfterMs = opts.retryAfterMs ?? 0;
  }
}

/** The longest Retry-After the SDK honours; a larger one is capped. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * A Retry-After (RFC 9110 §10.2.3) in milliseconds, capped at an hour:
 * delta-seconds (chiod sends these), or an HTTP-date (a proxy or load
 * balancer in front of chiod may send one), read as the time from now
 * until then. A date past, or anything else, is 0.
 */
export function parseRetryAfter(value: string | null | undefined): number {
  const v = (value ?? "").trim();
  if (/^[0-9]+$/.test(v)) return v.length >= 20 ? MAX_RETRY_AFTER_MS : Math.min(Number(v) * 1000, MAX_RETRY_AFTER_MS);
  const when = httpDate(v);
  return when === undefined ? 0 : Math.min(Math.max(when - Date.now(), 0), MAX_RETRY_AFTER_MS);
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const MON = `(?<mon>${MONTHS.join("|")})`;
const TIME = "(?<h>\\d{2}):(?<m>\\d{2}):(?<s>\\d{2})";
// RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms
// a recipient must accept too.
const HTTP_DATES = [
  new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?<d>\\d{2}) ${MON} (?<y>\\d{4}) ${TIME} GMT$`),
  new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (?<d>\\d{2})-${MON}-(?<yy>\\d{2}) ${TIME} GMT$`),
  new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MON} (?<d>[ \\d]\\d) ${TIME} (?<y>\\d{4})$`),
];

/** v as an HTTP-date (always UTC) in milliseconds since the epoch, or undefined if it is not one. */
function httpDate(v: string): number | undefined {
  for (const form of HTTP_DATES) {
    const g = form.exec(v)?.groups;
    if (!g) continue;
    let year: number;
    if (g["yy"] !== undefined) {
      // A two-digit year more than 50 years ahead is the most recent past
      // year with those digits (RFC 9110 §5.6.7).
      year = 2000 + Number(g["yy"]);
      if (year > new Date().getUTCFullYear() + 50) year -= 100;
    } else {
      year = Number(g["y"]);
    }
    const [month, day, h, m, s] = [MONTHS.indexOf(g["mon"]!), Number(g["d"]), Number(g["h"]), Number(g["m"]), Number(g["s"])];
    const d = new Date(0);
    d.setUTCFullYear(year, month, day); // not Date.UTC, which reads years 0-99 as 1900-1999
    d.setUTCHours(h, m, s);
    // Date rolls 31 Feb over into March and 25:00 into the next day: refuse.
    if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month || d.getUTCDate() !== day || d.getUTCHours() !== h || d.getUTCMinutes() !== m || d.getUTCSeconds() !== s) {
      return undefined;
    }
    return d.getTime();
  }
  return undefined;
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

/**
 * chiod's 500 "vote_recorded" to respond (`code` "vote_recorded"): the
 * approver's vote IS recorded (counted, its token spent, the request
 * approved), but a step after it failed, so the approved call is not
 * finished yet; chiod finishes it when its store recovers (awaitApproval
 * or approval tells how it ended). Do not vote again (the same token is
 * refused as a replay) and do not ask another approver. Never retried, and
 * not "outcome_unknown".
 */
export class VoteRecordedError extends ChioError {
  override name = "VoteRecordedError";

  constructor(message: string, opts: { status: number; serverCode: string }) {
    super("vote_recorded", message, opts);
  }
}

/**
 * chiod's 503 "vote_uncertain" to respond (`code` "vote_uncertain"): the
 * vote's own commit failed in a way that may still have reached chiod's
 * disk (an fsync error, a database COMMIT whose answer was lost). The vote
 * MAY OR MAY NOT be recorded, and may have approved, and run, the call.
 * Present the SAME token again once chiod recovers: a recorded vote is
 * refused as a replay (code "conflict": "already decided this request"),
 * never counted twice; otherwise it counts then. Do not ask another
 * approver on the belief that it did nothing. Not "unavailable" (nothing
 * allowed) nor "outcome_unknown"; resumeWithApproval retries it with the
 * same token, never a new one.
 */
export class VoteUncertainError extends ChioError {
  override name = "VoteUncertainError";

  constructor(message: string, opts: { status: number; serverCode: string; retryAfterMs?: number }) {
    super("vote_uncertain", message, opts);
  }
}

/**
 * A complete answer that cannot be read: larger than MAX_RESPONSE_BYTES, or
 * not the JSON expected. callTool reports it as "outcome_unknown": it came
 * after the call reached a server, so the call may have run.
 */
export class BadAnswerError extends ChioError {
  override name = "BadAnswerError";

  constructor(message: string, status?: number) {
    super("error", message, status === undefined ? {} : { status });
  }
}

/**
 * callTool could not send the call (`code` "unavailable", `requestId` set):
 * its last attempt could not even connect to chiod (connection refused, no
 * route, a host name that does not resolve: chiod is not running, or the
 * URL is wrong), and no attempt's answer was lost. The call did not run; it
 * is safe to send it again. Never "outcome_unknown".
 */
export class NotSentError extends ChioError {
  override name = "NotSentError";

  constructor(message: string, opts: { requestId: string; cause: unknown }) {
    super("unavailable", message, opts);
  }
}

/**
 * A "transport" error whose request was never sent: fetch failed making the
 * connection itself (see neverConnected). callTool retries it, and reports
 * a call whose last attempt met it, with no answer lost, as NotSentError.
 */
export class ConnectFailedError extends ChioError {
  override name = "ConnectFailedError";

  constructor(message: string, cause: unknown) {
    super("transport", message, { cause });
  }
}

/**
 * Whether fetch's error says no connection was made, so not a byte of the
 * request was written: the TCP connect failed (Node's syscall "connect":
 * refused, no route), the name did not resolve ("getaddrinfo"), or the
 * connection was not ready within undici's connect timeout
 * (UND_ERR_CONNECT_TIMEOUT, 10 s: the TCP connect and, for https, the TLS
 * handshake, as the Go and Python SDKs' connect timeouts). undici fires
 * that timeout only before it hands the connection over, and writes a
 * request only after; with several addresses tried, every one failed so.
 * Errors after connecting carry "read"/"write" or undici's other codes, and
 * a TLS handshake that failed (rather than ran out of time) has no syscall
 * "connect": never this. Nor is a port the Fetch standard blocks (see
 * blockedPort) ever connected to: fetch refuses it first.
 */
export function neverConnected(fetchError: unknown): boolean {
  const dialFailed = (c: unknown): boolean => {
    if (c instanceof AggregateError) return c.errors.length > 0 && c.errors.every(dialFailed);
    const { syscall, code } = (c ?? {}) as { syscall?: unknown; code?: unknown };
    return syscall === "connect" || syscall === "getaddrinfo" || code === "UND_ERR_CONNECT_TIMEOUT";
  };
  return blockedPort(fetchError) || dialFailed((fetchError as { cause?: unknown } | null | undefined)?.cause);
}

/**
 * Whether fetch refused the URL's port before connecting: the Fetch
 * standard's "bad port" list (6000, 6665–6669, 10080, …), which Node's
 * fetch enforces with a network error whose cause reads "bad port".
 */
export function blockedPort(fetchError: unknown): boolean {
  const cause = (fetchError as { cause?: unknown } | null | undefined)?.cause;
  return cause instanceof Error && cause.message === "bad port";
}

const byServerCode: Record<string, ChioErrorCode> = {
  bad_request: "bad_request",
  unauthorized: "unauthorized",
  not_found: "not_found",
  conflict: "conflict",
  replay_detected: "conflict",
  approval_rejected: "approval_rejected",
  unavailable: "unavailable",
  outcome_unknown: "outcome_unknown", // chiod's own: decided, outcome not recorded yet
  vote_recorded: "vote_recorded", // chiod's own: the vote is durable, a later step failed
  vote_uncertain: "vote_uncertain", // chiod's own: the vote's commit may or may not have landed
};

/**
 * The error for one of chiod's error answers; a body that is not chiod's
 * envelope is classified by status. A 502 or 504, or a 5xx that is not
 * chiod's envelope (a proxy's error page), is "outcome_unknown": a gateway
 * may send it after it forwarded the request and lost the answer.
 */
export function apiError(status: number, serverCode: string | undefined, message: string, retryAfterMs = 0): ChioError {
  // Own members only: a code such as "constructor" or "__proto__" would
  // otherwise find Object.prototype's and escape the status rules below.
  let code = serverCode && Object.hasOwn(byServerCode, serverCode) ? byServerCode[serverCode] : undefined;
  if (status === 502 || status === 504) code = "outcome_unknown";
  if (!code) {
    if (status >= 500) code = "outcome_unknown";
    else if (status === 429) code = "unavailable";
    else if (status === 401) code = "unauthorized";
    else if (status === 404) code = "not_found";
    else code = "error";
  }
  const text = `chio: ${serverCode ?? "http error"} (${status}): ${message}`;
  if (code === "vote_recorded") return new VoteRecordedError(text, { status, serverCode: serverCode! });
  if (code === "vote_uncertain") return new VoteUncertainError(text, { status, serverCode: serverCode!, retryAfterMs });
  const opts: { status: number; serverCode?: string; retryAfterMs: number } = { status, retryAfterMs };
  if (serverCode) opts.serverCode = serverCode;
  return new ChioError(code, text, opts);
}

/** Whether the request may have reached chiod without its answer reaching us: no complete answer, or a gateway's 5xx. */
export function isAnswerLost(err: unknown): boolean {
  if (err instanceof ConnectFailedError) return false; // nothing was sent
  return err instanceof ChioError && (err.code === "transport" || err.code === "outcome_unknown");
}

/**
 * Whether asking again may give another answer: no answer at all, or chiod
 * restarting, overloaded or behind a failing proxy. An uncertain vote (503
 * "vote_uncertain") is retryable: only respond meets it, and only with the
 * same token, which settles it.
 */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof ChioError)) return false;
  if (err.code === "transport") return true;
  if (err.code === "vote_recorded") return false; // final: its token again is only a replay
  return err.status !== undefined && (err.status >= 500 || err.status === 429);
}
