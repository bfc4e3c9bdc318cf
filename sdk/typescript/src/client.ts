/**
 * ChioClient: one agent talking to one chiod (SPEC §6) over Node's fetch.
 *
 * The Go SDK (sdk/) is the reference; this mirrors its behaviour: signed
 * call proofs, retries with the same request id, waiting across agent and
 * chiod restarts (and waiting out a call still in flight), Chio-Proof
 * reads, cancelling a parked call, resume with a token, confirm and ask.
 */

import type { ApprovalRequest, Question } from "./approver.js";
import { canonicalize, parseStrict } from "./canon.js";
import { namedAlike } from "./envelope.js";
import { BadAnswerError, ChioError, ConnectFailedError, NotSentError, apiError, blockedPort, isAnswerLost, isRetryable, neverConnected, parseRetryAfter } from "./errors.js";
import { PrivateKey } from "./keys.js";
import { fromState, type Allowed, type CallResult, type PendingApproval, type ToolDenied } from "./results.js";
import { STATUS_PROOF_HEADER, callProof, cancelProof, newId, parameterHash, statusProof } from "./signing.js";
import { watchSend } from "./send-watch.js";
import type { CallOptions, ClientOptions, HITLOptions, RespondResult, ResumeOptions, ToolCall, WaitOptions } from "./types.js";
import { anySignal, hitlDenial, isObject, jsonObject, readBody, readLimited, sleep, tokenText, wireIntent } from "./wire.js";

export const DEFAULT_URL = "http://127.0.0.1:7420";
/** The server whose confirm/ask verbs are used unless told otherwise. */
export const DEFAULT_HITL_SERVER = "demo";

// Retry policy for POST /v1/calls. A retry re-sends the same request id, so
// it can never run a tool twice; it is still bounded, because a chiod that
// keeps failing should surface as an error, not a hang.
const CALL_ATTEMPTS = 4;
const CALL_FIRST_BACKOFF_MS = 250;
// A proof older than this is re-signed before a retry (chiod refuses proofs
// more than 60 s old); the id and content, which chiod deduplicates on, stay.
const PROOF_REFRESH_MS = 30_000;

// Waiting: one long-poll (chiod caps it at 60 s), the margin by which a
// request may outlive it before the connection is presumed dead, and the
// reconnect pacing through network errors and chiod restarts.
const LONG_POLL_MS = 30_000;
const POLL_MARGIN_MS = 15_000;
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;
const REQUEST_TIMEOUT_MS = 60_000;

/** A request id chiod takes: 1..128 characters of [A-Za-z0-9._:-], not "." or ".." (checked apart). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const ID_RULE = '1..128 characters of [A-Za-z0-9._:-], not "." or ".."';

/**
 * chiod's rule for request and approval ids (approval.ValidID), checked
 * before an id goes in a path: "req/1" or ".." would reach another path
 * and read whatever answered there.
 */
function validId(id: unknown): id is string {
  return typeof id === "string" && REQUEST_ID.test(id) && id !== "." && id !== "..";
}

/** An approval id ("ar-…") within chiod's rule, or "bad_request" before anything is sent. */
function checkApprovalId(id: unknown, what = "an approval id"): string {
  if (!validId(id) || !id.startsWith("ar-")) throw new ChioError("bad_request", `chio: ${JSON.stringify(id)} is not ${what} (ar-…, ${ID_RULE})`);
  return id;
}

/** Untrusted input meets a limit first. */
const MAX_CAPABILITY_BYTES = 64 << 10;

const FINAL = new Set(["allowed", "denied", "cancelled"]);

/** The HTTP status chiod answers each call outcome with. */
const CALL_HTTP_STATUS: Record<string, number> = {
  allowed: 200,
  pending_approval: 202,
  dispatching: 202,
  denied: 403,
  cancelled: 403,
};

/**
 * chiod's call state names its call (request_id, always). One naming another
 * call, or none (a proxy or cache that served another request's answer),
 * says nothing about this one: a BadAnswerError, never its outcome (as the
 * Go and Python SDKs).
 */
function checkNames(state: Record<string, unknown>, requestId: string, status: number): void {
  if (state["request_id"] !== requestId) {
    const named = JSON.stringify(state["request_id"] ?? null).slice(0, 140);
    throw new BadAnswerError(
      `chio: bad response from chiod (${status}): the state (status ${JSON.stringify(String(state["status"] ?? "")).slice(0, 40)}) of call ${named}, not of ${requestId}`,
      status,
    );
  }
}

export class ChioClient {
  readonly #base: string;
  readonly #key: PrivateKey | undefined;
  readonly #capRaw: string | undefined;
  readonly #capId: string = "";
  readonly #bearer: string | undefined;
  readonly #fetch: typeof fetch;

  /**
   * A key and a capability are needed to call tools; either may be absent
   * for approver or reader tooling.
   */
  constructor(opts: ClientOptions = {}) {
    const url = opts.url ?? DEFAULT_URL;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new ChioError("bad_request", `chio: url ${JSON.stringify(url)} must be http(s)://host[:port]`);
    }
    // Node's fetch refuses a URL with user:password before connecting:
    // every call would fail as if its answer were lost. Refused now, not
    // quoted (the password would be in the message); chiod takes a bearer.
    if (u.username || u.password) throw new ChioError("bad_request", "chio: url must be http(s)://host[:port], without user:password (pass a token as bearer)");
    if ((u.protocol !== "http:" && u.protocol !== "https:") || !u.host || u.search || u.hash) {
      throw new ChioError("bad_request", `chio: url ${JSON.stringify(url)} must be http(s)://host[:port]`);
    }
    this.#base = url.replace(/\/+$/, "");
    this.#key = opts.keyFile !== undefined ? PrivateKey.load(opts.keyFile) : opts.key;
    const cap = opts.capabilityFile !== undefined ? readLimited(opts.capabilityFile, MAX_CAPABILITY_BYTES, "capability") : opts.capability;
    if (cap !== undefined) {
      const text = (typeof cap === "string" ? cap : Buffer.from(cap).toString("utf8")).trim();
      if (Buffer.byteLength(text) > MAX_CAPABILITY_BYTES) throw new ChioError("bad_request", "chio: capability larger than 64 KiB");
      const parsed = parseStrict(text);
      if (!isObject(parsed) || typeof parsed["id"] !== "string" || !parsed["id"]) {
        throw new ChioError("bad_request", "chio: not a capability (want a JSON object with an id)");
      }
      // A capability for another key would only fail later, call by call,
      // as "unauthorized": say what is wrong now.
      if (this.#key && parsed["subject"] !== this.#key.publicKey) {
        throw new ChioError("bad_request", `chio: the capability's subject ${JSON.stringify(parsed["subject"])} is not this key (${this.#key.publicKey})`);
      }
      this.#capRaw = text;
      this.#capId = parsed["id"];
    }
    // A token file's newline is trimmed (fetch would trim it too); a control
    // character left would fail in fetch, retried as a transport error with
    // the token in its message: refuse it now, quoting none of it.
    const bearer = opts.bearer?.trim();
    if (bearer !== undefined && !/^[\x20-\x7e]*$/.test(bearer)) {
      throw new ChioError("bad_request", "chio: the bearer token has a control or non-ASCII character (a header cannot carry it)");
    }
    this.#bearer = bearer;
    this.#fetch = opts.fetch ?? fetch;
  }

  /**
   * A client from CHIO_URL (default http://127.0.0.1:7420), CHIO_KEY (the
   * agent's PKCS#8 PEM key file) and CHIO_CAPABILITY (the capability file),
   * as the chio CLI and the Go SDK read them; overrides win.
   */
  static fromEnv(overrides: ClientOptions = {}): ChioClient {
    const env = process.env;
    const opts: ClientOptions = { url: env["CHIO_URL"] || DEFAULT_URL };
    if (env["CHIO_KEY"] && overrides.key === undefined) opts.keyFile = env["CHIO_KEY"];
    if (env["CHIO_CAPABILITY"] && overrides.capability === undefined) opts.capabilityFile = env["CHIO_CAPABILITY"];
    return new ChioClient({ ...opts, ...overrides });
  }

  /** The agent key's text form ("" without a key). */
  get publicKey(): string {
    return this.#key?.publicKey ?? "";
  }

  // --- calling tools ---------------------------------------------------------

  /**
   * Submit a call; resolves to Allowed, PendingApproval or ToolDenied (a
   * denial is a result, not an error). After a dropped connection, a 5xx
   * or a 429 the same id and content are sent again, a few times, with
   * backoff. A call chiod allowed but is still running (such a retry can
   * meet it in flight) is waited out: the result is its outcome, never a
   * pending_approval without a human.
   *
   * When every attempt failed and some answer was lost (no complete answer,
   * a gateway's 5xx), it throws code "outcome_unknown" with `requestId`: the
   * call may have run; retry with that requestId or await it. "unavailable"
   * (chiod's own 503 on every attempt) means nothing was allowed; a
   * NotSentError (also "unavailable", with `requestId`) means chiod could not
   * be connected to at all (refused, no route, an unknown host): the call
   * was not sent and did not run.
   *
   * opts.timeoutMs and opts.signal end the call early: a NotSentError when
   * no attempt can have reached chiod, else "outcome_unknown" (see
   * CallOptions).
   */
  async callTool(call: ToolCall, opts: CallOptions = {}): Promise<CallResult> {
    const key = this.#key;
    if (!key || this.#capRaw === undefined) {
      throw new ChioError("bad_request", "chio: calling a tool needs the agent key and capability (key/keyFile, capability/capabilityFile or fromEnv)");
    }
    const { server, tool } = call;
    if (typeof server !== "string" || !server || typeof tool !== "string" || !tool) {
      throw new ChioError("bad_request", "chio: server and tool are required");
    }
    const requestId = call.requestId ?? newId("req-");
    // chiod's rule (approval.IDRule), checked before anything is sent: an id
    // that cannot go in a header would fail in fetch, as if chiod had
    // lost the answer.
    if (!validId(requestId) || requestId.startsWith("ar-")) {
      throw new ChioError(
        "bad_request",
        `chio: request id ${JSON.stringify(requestId)} must be 1..128 characters of [A-Za-z0-9._:-], not "." or "..", not starting with ar- (approval ids)`,
      );
    }
    const args = jsonObject(call.arguments ?? {}, "arguments");
    const intent = call.governedIntent === undefined ? undefined : wireIntent(call.governedIntent);
    const ph = parameterHash(server, tool, args, intent ?? null);
    // Encoded once: every attempt sends the same content under the same id.
    const fixed =
      `{"request_id":${canonicalize(requestId)},"capability":${this.#capRaw},"server":${canonicalize(server)}` +
      `,"tool":${canonicalize(tool)},"operation":${canonicalize(call.operation ?? "invoke")},"arguments":${canonicalize(args)}` +
      (intent !== undefined ? `,"governed_intent":${canonicalize(intent)}` : "");

    let body = "";
    let signedAt = 0;
    let backoff = CALL_FIRST_BACKOFF_MS;
    let pause = backoff; // before the next attempt
    let lost = false; // some attempt may have reached chiod without its answer reaching us
    let state: Record<string, unknown>;
    const { timeoutMs, signal } = opts;
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    const ended = (why: unknown, mayHaveRun: boolean): ChioError => this.#callEnded(requestId, why, mayHaveRun);
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw ended(signal.reason, lost);
      if (deadline !== undefined && Date.now() >= deadline) throw ended(`timeoutMs (${timeoutMs}) passed`, lost);
      if (!body || Date.now() - signedAt > PROOF_REFRESH_MS) {
        signedAt = Date.now();
        const proof = callProof(key, {
          requestId, capabilityId: this.#capId, server, tool, parameterHash: ph, issuedAt: Math.floor(signedAt / 1000),
        });
        body = `${fixed},"proof":${canonicalize(proof)}}`;
      }
      const budget = deadline === undefined ? undefined : AbortSignal.timeout(Math.max(0, deadline - Date.now()));
      const stop = anySignal(budget, signal);
      // Whether this attempt was written, should the caller cut it short.
      const watch = stop && this.#fetch === globalThis.fetch ? watchSend(this.#base + "/v1/calls", requestId) : undefined;
      try {
        state = await this.#postCall(requestId, body, stop);
        break;
      } catch (e) {
        if (stop?.aborted) {
          // The caller's signal or timeout cut the attempt short: it may
          // have been written, unless undici was seen taking it and not
          // writing it (then it never will).
          const why = signal?.aborted ? signal.reason : `timeoutMs (${timeoutMs}) passed`;
          throw ended(why, lost || !watch?.neverWritten);
        }
        lost ||= isAnswerLost(e);
        // Ask again no sooner than chiod's Retry-After; if it said a time
        // past the deadline, its refusal is the answer now.
        const told = e instanceof ChioError ? e.retryAfterMs : 0;
        pause = Math.max(backoff, told);
        const toldPastDeadline = told > backoff && deadline !== undefined && Date.now() + pause >= deadline;
        if (!isRetryable(e) || attempt === CALL_ATTEMPTS || toldPastDeadline) {
          const where = ` (call ${requestId}, attempt ${attempt} of ${CALL_ATTEMPTS})`;
          if (lost) {
            // Even if the last attempt met chiod's own 503, an earlier one may
            // have run the call: never report it as "nothing was allowed".
            const status = e instanceof ChioError ? e.status : undefined;
            throw new ChioError(
              "outcome_unknown",
              `chio: call ${requestId}: outcome unknown, it may have run (retry with the same requestId or await it): ${(e as Error).message}${where}`,
              { requestId, cause: e, ...(status === undefined ? {} : { status }) },
            );
          }
          if (e instanceof ConnectFailedError) {
            // The last attempt could not connect, and every earlier one could
            // not either or was turned away (chiod's 503, a 429): it did not run.
            throw new NotSentError(
              `chio: call ${requestId} was not sent, it did not run (is chiod running at ${this.#base}?): ${e.message}${where}`,
              { requestId, cause: e },
            );
          }
          if (e instanceof Error) e.message += where;
          throw e;
        }
      } finally {
        watch?.close();
      }
      if (deadline !== undefined && Date.now() + pause >= deadline) {
        throw ended(`timeoutMs (${timeoutMs}) passed`, lost); // before the next attempt
      }
      try {
        await sleep(pause, signal);
      } catch {
        throw ended(signal?.reason, lost);
      }
      backoff *= 2;
    }

    if (state["status"] === "dispatching" && !state["approval_request_id"]) {
      // Allowed and in flight (a retry while chiod finishes the call it
      // already decided): wait for its outcome rather than report a human
      // wait that is not happening. Whatever ends that wait, the call was
      // allowed and is running: it may have run.
      const wait: WaitOptions = {};
      if (deadline !== undefined) wait.timeoutMs = Math.max(0, deadline - Date.now());
      if (signal) wait.signal = signal;
      try {
        return await this.awaitApproval(requestId, wait);
      } catch (e) {
        if (!(e instanceof ChioError)) {
          if (signal?.aborted) throw ended(signal.reason, true);
          throw e;
        }
        const status = e.status;
        throw new ChioError(
          "outcome_unknown",
          `chio: call ${requestId}: allowed and running, outcome unknown, it may have run (retry with the same requestId or await it): ${e.message}`,
          { requestId, cause: e, ...(status === undefined ? {} : { status }) },
        );
      }
    }
    let result: CallResult;
    try {
      result = fromState(state);
    } catch (e) {
      // An answer naming no status chiod sends: the call may have been
      // decided and run. Never a plain error read as "it failed".
      throw new ChioError(
        "outcome_unknown",
        `chio: call ${requestId}: outcome unknown, it may have run (retry with the same requestId or await it): ${(e as Error).message}`,
        { requestId, cause: e },
      );
    }
    // A replayed outcome (an idempotent retry) does not carry the deadline:
    // read it from the request. Best effort; the id is what matters. Within
    // timeoutMs, as every read of the call (as Go's ctx and Python's
    // timeout): not started once it passed, and cut short when it passes.
    const left = deadline === undefined ? undefined : deadline - Date.now();
    if (result.status === "pending_approval" && result.deadline === undefined && (left === undefined || left > 0)) {
      const stop = anySignal(left === undefined ? undefined : AbortSignal.timeout(left), signal);
      try {
        const req = await this.approval(result.approvalRequestId, stop);
        if (typeof req.expires_at === "number") result.deadline = new Date(req.expires_at * 1000);
        if (!result.summary && typeof req.summary === "string") result.summary = req.summary;
      } catch (e) {
        if (!(e instanceof ChioError) && !stop?.aborted) throw e;
      }
    }
    return result;
  }

  /**
   * callTool's error when its signal or timeout ended it: "outcome_unknown"
   * if some attempt may have reached chiod without its answer reaching us,
   * else a NotSentError (every attempt failed before its connection was
   * ready, or was turned away by chiod).
   */
  #callEnded(requestId: string, why: unknown, mayHaveRun: boolean): ChioError {
    const text = why instanceof Error ? why.message : String(why);
    if (mayHaveRun) {
      return new ChioError(
        "outcome_unknown",
        `chio: call ${requestId}: outcome unknown, it may have run (retry with the same requestId or await it): ended early: ${text}`,
        { requestId, cause: why },
      );
    }
    return new NotSentError(`chio: call ${requestId} was not sent, it did not run: ended before any attempt reached chiod: ${text}`, {
      requestId,
      cause: why,
    });
  }

  async #postCall(requestId: string, body: string, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    let status: number, data: unknown;
    try {
      try {
        ({ status, data } = await this.#send("POST", "/v1/calls", body, { "Idempotency-Key": requestId }, [200, 202, 403], REQUEST_TIMEOUT_MS, signal));
      } catch (e) {
        if (!(e instanceof ChioError && e.status !== undefined && e.status >= 200 && e.status < 300)) throw e;
        // A success chiod never answers a call with (201, 204, …: a
        // proxy's, a newer server's): the request went through and the call
        // may have run. An unreadable answer, never "it failed" or "it was
        // not sent", whatever its body says.
        throw new BadAnswerError(`chio: bad response from chiod (${e.status}): a status chiod never answers a call with`, e.status);
      }
      if (!isObject(data)) throw new BadAnswerError(`chio: bad response from chiod (${status}): not an object`, status);
      // An envelope that claims an error and names none ("", 7, []) is
      // neither an error nor an outcome: unreadable, as in Go and Python
      // (testdata/sdk/call_outcomes.json). null is absent.
      const code = data["error"];
      if (code !== undefined && code !== null && (typeof code !== "string" || !code)) {
        throw new BadAnswerError(`chio: bad response from chiod (${status}): an error envelope naming no error`, status);
      }
      if (typeof code !== "string") {
        checkNames(data, requestId, status);
        const said = data["status"];
        if (typeof said !== "string" || !Object.hasOwn(CALL_HTTP_STATUS, said) || CALL_HTTP_STATUS[said] !== status) {
          // Not chiod's answer (a 200 saying "denied", a 403 saying
          // "allowed": a proxy rewrote the status): neither a decision nor a
          // success, so the call may have run (as chio call and the Go and
          // Python SDKs).
          throw new BadAnswerError(
            `chio: bad response from chiod (${status}): call status ${JSON.stringify(String(said)).slice(0, 40)}, which chiod answers with another HTTP status`,
            status,
          );
        }
        if (said === "pending_approval" && !data["approval_request_id"]) {
          // chiod parks a call under an approval id: a pending answer
          // without one is not chiod's (as chio call reads it).
          throw new BadAnswerError(`chio: bad response from chiod (${status}): a pending answer without an approval id`, status);
        }
      }
    } catch (e) {
      if (!(e instanceof BadAnswerError)) throw e;
      // chiod (or a proxy after it) answered and the answer cannot be read:
      // the call may have been decided and run. Not retried (the same
      // answer would come back); callTool reports it as outcome_unknown.
      throw new ChioError("outcome_unknown", e.message, { requestId, cause: e });
    }
    if (typeof data["error"] === "string") {
      throw apiError(status, data["error"], String(data["message"] ?? "")); // a 403 that is an error, not a denial
    }
    return data;
  }

  /**
   * Read a call's state once, without waiting (id: a request id or an
   * approval id): Allowed, ToolDenied, or PendingApproval while a human
   * decides, or with `running: true` while the allowed (or approved) tool
   * runs — then with approvalRequestId "" if no human was involved.
   * awaitApproval(result.requestId) finishes the wait in every case.
   */
  async status(id: string): Promise<CallResult> {
    // Once, the approval read too: status takes no signal or timeout that
    // could end a retry loop (with chiod down it would never settle).
    const rid = await this.#requestIdOf(id, undefined, undefined, false);
    return fromState(await this.#getCall(rid, 0, undefined));
  }

  // --- waiting -----------------------------------------------------------------

  /**
   * Wait until the call named by id (an approval id "ar-…" or a request id)
   * is allowed and executed, denied or cancelled. Only the id and the same
   * agent key (or a bearer) are needed: the process that made the call may
   * be gone. A call that already ended answers at once with its stored
   * output. Reconnects through network errors and chiod restarts; after
   * timeoutMs, throws code "timed_out" naming the call (requestId), which
   * may still be pending.
   */
  async awaitApproval(id: string, opts: WaitOptions = {}): Promise<Allowed | ToolDenied> {
    const deadline = opts.timeoutMs === undefined ? undefined : Date.now() + opts.timeoutMs;
    const rid = await this.#requestIdOf(id, deadline, opts.signal);
    let status = "unresolved";
    let backoff = RECONNECT_FIRST_MS;
    for (;;) {
      const wait = deadline === undefined ? LONG_POLL_MS : Math.min(LONG_POLL_MS, deadline - Date.now());
      if (wait <= 0) throw new ChioError("timed_out", `chio: await ${id}: timed out (still ${status})`, { requestId: rid });
      const started = Date.now();
      let state: Record<string, unknown>;
      try {
        state = await this.#retrying((sig) => this.#getCall(rid, wait, sig), deadline, opts.signal, `await ${id} (still ${status})`);
      } catch (e) {
        // The call may still be pending: name it, so a caller who let the
        // SDK choose its id (confirm, ask) can await or cancel it.
        if (e instanceof ChioError && e.code === "timed_out" && e.requestId === undefined) {
          throw new ChioError("timed_out", e.message, { requestId: rid, cause: e.cause });
        }
        throw e;
      }
      status = String(state["status"] ?? "");
      if (FINAL.has(status)) return fromState(state) as Allowed | ToolDenied;
      if (status !== "pending_approval" && status !== "dispatching") {
        // Neither ended nor waiting: an answer chiod never sends. Fail
        // closed at once rather than poll it again in a loop.
        throw new ChioError("error", `chio: await ${id}: unknown status ${JSON.stringify(status)} from chiod`);
      }
      if (Date.now() - started < wait / 2) {
        // Still pending, answered well before the wait passed (a proxy that
        // drops ?wait=, a chiod shutting down): pause as after a failure,
        // rather than poll again in a tight loop.
        const pause = deadline === undefined ? backoff : Math.min(backoff, deadline - Date.now());
        opts.signal?.throwIfAborted();
        if (pause > 0) await sleep(pause, opts.signal);
        backoff = Math.min(2 * backoff, RECONNECT_MAX_MS);
      } else {
        backoff = RECONNECT_FIRST_MS;
      }
    }
  }

  /**
   * Present a signed approval token obtained out of band (from a channel, a
   * workflow engine) and wait for the call, as awaitApproval. The token
   * names its approval request. A token already presented (or a request
   * already resolved) is not an error: the wait reports how the call ended.
   */
  async resumeWithApproval(opts: ResumeOptions): Promise<Allowed | ToolDenied> {
    const { raw, token } = tokenText(await opts.approvalToken);
    const aid = checkApprovalId(token["request_id"], "an approval id: the token's request_id must be one");
    if (opts.approvalRequestId !== undefined && opts.approvalRequestId !== aid) {
      throw new ChioError("bad_request", `chio: the token is for ${aid}, not ${opts.approvalRequestId}`);
    }
    const deadline = opts.timeoutMs === undefined ? undefined : Date.now() + opts.timeoutMs;
    try {
      await this.#retrying((sig) => this.respond(aid, raw, { signal: sig }), deadline, opts.signal, `respond ${aid}`);
    } catch (e) {
      // After a retry, our own token consumed by the attempt whose answer
      // was lost; otherwise someone decided first. "vote_recorded": our vote
      // is recorded, the call not finished yet (recovery finishes it).
      // Either way the call's state is the answer.
      if (!(e instanceof ChioError && (e.code === "conflict" || e.code === "vote_recorded"))) throw e;
    }
    const wait: WaitOptions = {};
    if (deadline !== undefined) wait.timeoutMs = Math.max(0, deadline - Date.now());
    if (opts.signal) wait.signal = opts.signal;
    return this.awaitApproval(aid, wait);
  }

  // --- asking a human mid-run ------------------------------------------------

  /**
   * Ask a human a yes/no question and wait: true when approved, false when a
   * human said no. The approval's deadline (or timeoutMs) passing throws
   * "timed_out"; a policy guard denying the verb, "denied_by_policy"; a
   * withdrawn (cancelled) request, "cancelled".
   */
  async confirm(prompt: string, details?: unknown, opts: HITLOptions = {}): Promise<boolean> {
    const args: Record<string, unknown> = { prompt };
    if (details !== undefined) args["details"] = details;
    const res = await this.#hitl("confirm", args, opts);
    if (res.status !== "allowed" && res.guard === "human-approval") return false;
    hitlDenial(res);
    const out = (res as Allowed).output;
    if (!isObject(out) || out["confirmed"] !== true) throw new ChioError("error", `chio: confirm ${res.requestId}: unexpected output ${JSON.stringify(out)}`);
    return true;
  }

  /**
   * Put a small form to a human and wait for the signed answers; every
   * answer comes back as a list (one element for text and single). A human
   * declining throws "declined"; the deadline, "timed_out"; a policy guard,
   * "denied_by_policy"; a withdrawn (cancelled) request, "cancelled".
   */
  async ask(prompt: string, questions: Question[], opts: HITLOptions = {}): Promise<Record<string, string[]>> {
    const args: Record<string, unknown> = { questions };
    if (prompt) args["prompt"] = prompt;
    const res = await this.#hitl("ask", args, opts);
    if (res.status !== "allowed" && res.guard === "human-approval") {
      throw new ChioError("declined", `chio: ask ${res.requestId}: declined: ${res.reason}`);
    }
    hitlDenial(res);
    const output = (res as Allowed).output;
    const answers = isObject(output) ? output["answers"] : undefined;
    if (!isObject(answers)) throw new ChioError("error", `chio: ask ${res.requestId}: unexpected output ${JSON.stringify(output)}`);
    const out: Record<string, string[]> = Object.create(null);
    for (const [id, v] of Object.entries(answers)) {
      if (typeof v === "string") out[id] = [v];
      else if (Array.isArray(v) && v.every((x) => typeof x === "string")) out[id] = v as string[];
      else throw new ChioError("error", `chio: ask ${res.requestId}: answer to ${JSON.stringify(id)} is ${JSON.stringify(v)}`);
    }
    return out;
  }

  async #hitl(tool: string, args: Record<string, unknown>, opts: HITLOptions): Promise<Allowed | ToolDenied> {
    const deadline = opts.timeoutMs === undefined ? undefined : Date.now() + opts.timeoutMs;
    const call: ToolCall = { server: opts.server ?? DEFAULT_HITL_SERVER, tool, arguments: args };
    if (opts.requestId !== undefined) call.requestId = opts.requestId;
    const budget = opts.timeoutMs === undefined ? undefined : AbortSignal.timeout(opts.timeoutMs);
    const stop = anySignal(budget, opts.signal);
    let r: CallResult;
    try {
      r = await this.callTool(call, stop ? { signal: stop } : {});
    } catch (e) {
      // timeoutMs passing is "timed_out", as in Go and Python; the cause
      // (a NotSentError, or "outcome_unknown") says whether it was sent.
      if (budget?.aborted && !opts.signal?.aborted && e instanceof ChioError) {
        throw new ChioError("timed_out", `chio: ${tool}: timed out before chiod answered: ${e.message}`, {
          cause: e,
          ...(e.requestId === undefined ? {} : { requestId: e.requestId }),
        });
      }
      throw e;
    }
    if (r.status !== "pending_approval") return r;
    const wait: WaitOptions = {};
    if (deadline !== undefined) wait.timeoutMs = Math.max(0, deadline - Date.now());
    if (opts.signal) wait.signal = opts.signal;
    return this.awaitApproval(r.requestId, wait);
  }

  // --- approvals ---------------------------------------------------------------

  /**
   * Read one approval request. An agent may read the requests that park its
   * own calls; anything else needs a bearer.
   */
  async approval(id: string, signal?: AbortSignal): Promise<ApprovalRequest> {
    checkApprovalId(id);
    const { data } = await this.#send("GET", "/approvals/" + encodeURIComponent(id), undefined, this.#readAuth(id), [200], REQUEST_TIMEOUT_MS, signal);
    const req = isObject(data) ? data["request"] : undefined;
    if (!isObject(req)) throw new ChioError("error", `chio: approval ${id}: empty answer from chiod`);
    if (req["approval_id"] !== id) {
      // Another request (a proxy or cache that served another answer): it
      // names another call, to await or sign.
      throw new ChioError("error", `chio: approval ${id}: chiod answered with request ${JSON.stringify(req["approval_id"] ?? null).slice(0, 140)}`);
    }
    return req as unknown as ApprovalRequest;
  }

  /**
   * Present a signed approval token (the token is the credential; no bearer
   * is sent). One attempt: after a transport error the token may or may not
   * have been consumed; resumeWithApproval or awaitApproval tells how the
   * call ended. A VoteRecordedError (code "vote_recorded"): the vote IS
   * recorded but the approved call is not finished yet; do not vote again
   * (awaitApproval tells how it ends). A VoteUncertainError (code
   * "vote_uncertain"): the vote may or may not be recorded; present the
   * same token again (a recorded vote is refused as a replay, code
   * "conflict") and do not ask another approver on the belief it did
   * nothing.
   */
  async respond(approvalId: string, token: string | Uint8Array | Record<string, unknown>, opts: { channel?: string; signal?: AbortSignal | undefined } = {}): Promise<RespondResult> {
    checkApprovalId(approvalId);
    const { raw } = tokenText(token);
    // Assembled around the signed text, so that it reaches chiod exactly as signed.
    const body = `{"token":${raw}${opts.channel ? `,"channel":${canonicalize(opts.channel)}` : ""}}`;
    const { data } = await this.#send("POST", `/approvals/${encodeURIComponent(approvalId)}/respond`, body, {}, [200], REQUEST_TIMEOUT_MS, opts.signal);
    return data as RespondResult;
  }

  /**
   * Withdraw a parked call before a human decided it: the call ends
   * cancelled, with a signed `cancelled` receipt, and everyone awaiting it
   * gets a ToolDenied with status "cancelled" and this reason.
   *
   * With the agent key, the agent cancels (a Chio-Proof in the
   * chio.cancel.v1 domain over the approval id, the time and the reason: a
   * read proof cannot cancel); a client without a key but with an admin
   * bearer cancels as an operator. An id that is not an approval id or an
   * empty reason is "bad_request"; a request already decided (or
   * cancelled) is "conflict". One attempt: after a "transport" error,
   * status() or awaitApproval() says whether it took.
   */
  async cancel(approvalId: string, reason: string, opts: { signal?: AbortSignal } = {}): Promise<ToolDenied> {
    checkApprovalId(approvalId);
    if (typeof reason !== "string" || !reason.trim()) throw new ChioError("bad_request", "chio: a cancellation needs a reason");
    const body = canonicalize({ reason }); // strict: a lone surrogate is refused here
    let headers: Record<string, string>;
    if (this.#key) headers = { [STATUS_PROOF_HEADER]: cancelProof(this.#key, approvalId, reason) };
    else if (this.#bearer) headers = { Authorization: "Bearer " + this.#bearer };
    else throw new ChioError("unauthorized", "chio: cancelling needs the agent key or an admin token (bearer)");
    const { data } = await this.#send("POST", "/approvals/" + encodeURIComponent(approvalId) + "/cancel", body, headers, [200], REQUEST_TIMEOUT_MS, opts.signal);
    const result = isObject(data) ? fromState(data) : undefined;
    // The cancelled call of this approval, not another's withdrawal.
    if (result?.status !== "cancelled" || result.approvalRequestId !== approvalId) {
      throw new ChioError("error", `chio: cancel ${approvalId}: unexpected answer from chiod: ${JSON.stringify(data).slice(0, 200)}`);
    }
    return result;
  }

  /**
   * Pending approval requests, oldest first: this agent's with a key,
   * everyone's without. chiod serves the list to reader and admin tokens
   * only, so this needs a bearer.
   */
  async pending(): Promise<ApprovalRequest[]> {
    if (!this.#bearer) throw new ChioError("unauthorized", "chio: listing pending approvals needs a reader token (bearer)");
    const q = new URLSearchParams({ limit: "1000" });
    if (this.#key) q.set("subject_id", this.#key.publicKey);
    const { data } = await this.#send("GET", "/approvals/pending?" + q.toString(), undefined, { Authorization: "Bearer " + this.#bearer });
    const list = isObject(data) ? data["approvals"] : undefined;
    return Array.isArray(list) ? (list as ApprovalRequest[]) : [];
  }

  // --- plumbing ----------------------------------------------------------------

  /** Map an approval id to its parked call's request id; the read is retried unless retry is false. */
  async #requestIdOf(id: string, deadline: number | undefined, signal: AbortSignal | undefined, retry = true): Promise<string> {
    if (typeof id !== "string" || !id) throw new ChioError("bad_request", "chio: empty id");
    if (!validId(id)) throw new ChioError("bad_request", `chio: id ${JSON.stringify(id)} must be ${ID_RULE}`);
    if (!id.startsWith("ar-")) return id;
    const req = retry ? await this.#retrying((sig) => this.approval(id, sig), deadline, signal, `await ${id}`) : await this.approval(id);
    if (typeof req.request_id !== "string" || !req.request_id) throw new ChioError("error", `chio: approval ${id} names no call`);
    return req.request_id;
  }

  /** One GET /v1/calls/{id}, long-polling for waitMs. */
  async #getCall(requestId: string, waitMs: number, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    let path = "/v1/calls/" + encodeURIComponent(requestId);
    if (waitMs > 0) path += `?wait=${Math.floor(waitMs)}ms`;
    const { data } = await this.#send("GET", path, undefined, this.#readAuth(requestId), [200], waitMs + POLL_MARGIN_MS, signal);
    if (!isObject(data)) throw new ChioError("error", "chio: bad response from chiod: not an object");
    checkNames(data, requestId, 200);
    return data;
  }

  /**
   * fn() until it succeeds, fails in a way asking again will not change, or
   * the deadline passes ("timed_out"). Only reads and token presentation
   * (which the kernel makes single-use) come through here.
   */
  async #retrying<T>(
    fn: (signal: AbortSignal | undefined) => Promise<T>,
    deadline: number | undefined,
    signal: AbortSignal | undefined,
    what: string,
  ): Promise<T> {
    let backoff = RECONNECT_FIRST_MS;
    let pause = backoff;
    for (;;) {
      const remaining = deadline === undefined ? undefined : deadline - Date.now();
      if (remaining !== undefined && remaining <= 0) throw new ChioError("timed_out", `chio: ${what}: timed out`);
      const budget = remaining === undefined ? undefined : AbortSignal.timeout(remaining);
      try {
        return await fn(anySignal(budget, signal));
      } catch (e) {
        signal?.throwIfAborted();
        if (budget?.aborted) throw new ChioError("timed_out", `chio: ${what}: timed out`, { cause: e });
        if (!isRetryable(e)) throw e;
        // Ask again no sooner than chiod's Retry-After; if it said a time
        // past the deadline, its refusal is the answer now.
        const told = e instanceof ChioError ? e.retryAfterMs : 0;
        pause = Math.max(backoff, told);
        if (deadline !== undefined && Date.now() + pause >= deadline) {
          if (told > backoff) throw e;
          throw new ChioError("timed_out", `chio: ${what}: timed out; last error: ${(e as Error).message}`, { cause: e });
        }
      }
      await sleep(pause, signal);
      backoff = Math.min(2 * backoff, RECONNECT_MAX_MS);
    }
  }

  /** Authorize a read of id: the bearer if set, and a Chio-Proof by the agent key if set (chiod uses the bearer first). */
  #readAuth(id: string): Record<string, string> {
    const h: Record<string, string> = {};
    if (this.#bearer) h["Authorization"] = "Bearer " + this.#bearer;
    if (this.#key) h[STATUS_PROOF_HEADER] = statusProof(this.#key, id);
    if (!Object.keys(h).length) throw new ChioError("unauthorized", `chio: reading ${id} needs the agent key or a bearer`);
    return h;
  }

  /** One request. Statuses in ok resolve to {status, data}; any other status throws the error chiod's envelope names. */
  async #send(
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string>,
    ok: number[] = [200],
    timeoutMs: number = REQUEST_TIMEOUT_MS,
    signal?: AbortSignal,
  ): Promise<{ status: number; data: unknown }> {
    const url = this.#base + path;
    const hdr: Record<string, string> = { Accept: "application/json", "User-Agent": "chio-typescript/0.1", ...headers };
    if (body !== undefined) hdr["Content-Type"] = "application/json";
    const timeout = AbortSignal.timeout(timeoutMs);
    const sig = anySignal(timeout, signal)!;
    let status: number;
    let text: string;
    let utf8: boolean;
    let retryAfterMs: number;
    try {
      // A proof or token is meant for this server: never follow a redirect.
      const init: RequestInit = { method, headers: hdr, signal: sig, redirect: "manual" };
      if (body !== undefined) init.body = body;
      const resp = await this.#fetch(url, init);
      status = resp.status;
      retryAfterMs = parseRetryAfter(resp.headers.get("Retry-After"));
      ({ text, utf8 } = await readBody(resp));
    } catch (e) {
      if (e instanceof ChioError) throw e;
      signal?.throwIfAborted();
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      let why = timeout.aborted ? `no answer within ${timeoutMs} ms` : (cause?.code ?? cause?.message ?? (e as Error).message);
      if (!timeout.aborted && blockedPort(e)) {
        why = `Node's fetch blocks port ${new URL(url).port} (the Fetch standard's "bad port" list): run chiod on another port`;
      }
      if (!timeout.aborted && neverConnected(e)) throw new ConnectFailedError(`chio: cannot connect to chiod at ${url}: ${why}`, e);
      throw new ChioError("transport", `chio: cannot reach chiod at ${url}: ${why}`, { cause: e });
    }
    if (ok.includes(status)) {
      // Not UTF-8: not chiod's (it never sends such bytes), read no further.
      if (!utf8) throw new BadAnswerError(`chio: bad response from chiod (${status}): not UTF-8`, status);
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch (e) {
        throw new BadAnswerError(`chio: bad response from chiod (${status}): ${(e as Error).message}`, status);
      }
      // One that can be read two ways cannot be read (envelope.ts).
      const alike = namedAlike(text);
      if (alike !== undefined) throw new BadAnswerError(`chio: bad response from chiod (${status}): two members named alike: ${alike}`, status);
      return { status, data };
    }
    let env: unknown;
    try {
      env = utf8 ? JSON.parse(text) : undefined; // not UTF-8: not chiod's envelope
    } catch {
      env = undefined;
    }
    // An error envelope that can be read two ways is not chiod's: the answer is classified by its status alone.
    if (isObject(env) && namedAlike(text) !== undefined) env = undefined;
    if (isObject(env) && typeof env["error"] === "string") throw apiError(status, env["error"], String(env["message"] ?? ""), retryAfterMs);
    throw apiError(status, undefined, text.trim().slice(0, 200) || "no body", retryAfterMs);
  }
}
