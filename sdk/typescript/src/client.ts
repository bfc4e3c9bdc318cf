/**
 * ChioClient: one agent talking to one chiod (SPEC §6) over Node's fetch.
 *
 * The Go SDK (sdk/) is the reference; this mirrors its behaviour: signed
 * call proofs, retries with the same request id, waiting across agent and
 * chiod restarts (and waiting out a call still in flight), Chio-Proof
 * reads, cancelling a parked call, resume with a token, confirm and ask.
 */

import { cancel, getApproval, pending, respond } from "./approvals.js";
import type { ApprovalRequest, Question } from "./approver.js";
import { callEnded, checkNames, postCall } from "./call-answer.js";
import { canonicalize, parseStrict } from "./canon.js";
import { ChioError, ConnectFailedError, NotSentError, isAnswerLost, isRetryable } from "./errors.js";
import { ID_RULE, checkApprovalId, validId } from "./ids.js";
import { PrivateKey } from "./keys.js";
import { fromState, type Allowed, type CallResult, type ToolDenied } from "./results.js";
import { callProof, newId, parameterHash } from "./signing.js";
import { watchSend } from "./send-watch.js";
import { RECONNECT_FIRST_MS, RECONNECT_MAX_MS, Transport, retrying } from "./transport.js";
import type { CallOptions, ClientOptions, HITLOptions, RespondResult, ResumeOptions, ToolCall, WaitOptions } from "./types.js";
import { anySignal, hitlDenial, isObject, jsonObject, readLimited, sleep, tokenText, wireIntent } from "./wire.js";

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

// Waiting: one long-poll (chiod caps it at 60 s), and the margin by which a
// request may outlive it before the connection is presumed dead (the
// reconnect pacing is transport.ts's).
const LONG_POLL_MS = 30_000;
const POLL_MARGIN_MS = 15_000;


/** Untrusted input meets a limit first. */
const MAX_CAPABILITY_BYTES = 64 << 10;

const FINAL = new Set(["allowed", "denied", "cancelled"]);



export class ChioClient {
  readonly #base: string;
  readonly #key: PrivateKey | undefined;
  readonly #capRaw: string | undefined;
  readonly #capId: string = "";
  readonly #t: Transport;

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
    this.#t = new Transport(this.#base, opts.fetch ?? fetch, this.#key, bearer);
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
    const ended = (why: unknown, mayHaveRun: boolean): ChioError => callEnded(requestId, why, mayHaveRun);
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
      const watch = stop && this.#t.fetchFn === globalThis.fetch ? watchSend(this.#base + "/v1/calls", requestId) : undefined;
      try {
        state = await postCall(this.#t, requestId, body, stop);
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
        state = await retrying((sig) => this.#getCall(rid, wait, sig), deadline, opts.signal, `await ${id} (still ${status})`);
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
      await retrying((sig) => this.respond(aid, raw, { signal: sig }), deadline, opts.signal, `respond ${aid}`);
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

  approval(id: string, signal?: AbortSignal): Promise<ApprovalRequest> {
    return getApproval(this.#t, id, signal);
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

  respond(approvalId: string, token: string | Uint8Array | Record<string, unknown>, opts: { channel?: string; signal?: AbortSignal | undefined } = {}): Promise<RespondResult> {
    return respond(this.#t, approvalId, token, opts);
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

  cancel(approvalId: string, reason: string, opts: { signal?: AbortSignal } = {}): Promise<ToolDenied> {
    return cancel(this.#t, approvalId, reason, opts);
  }

  /**
   * Pending approval requests, oldest first: this agent's with a key,
   * everyone's without. chiod serves the list to reader and admin tokens
   * only, so this needs a bearer.
   */

  pending(): Promise<ApprovalRequest[]> {
    return pending(this.#t);
  }





  // --- plumbing ----------------------------------------------------------------

  /** Map an approval id to its parked call's request id; the read is retried unless retry is false. */
  async #requestIdOf(id: string, deadline: number | undefined, signal: AbortSignal | undefined, retry = true): Promise<string> {
    if (typeof id !== "string" || !id) throw new ChioError("bad_request", "chio: empty id");
    if (!validId(id)) throw new ChioError("bad_request", `chio: id ${JSON.stringify(id)} must be ${ID_RULE}`);
    if (!id.startsWith("ar-")) return id;
    const req = retry ? await retrying((sig) => this.approval(id, sig), deadline, signal, `await ${id}`) : await this.approval(id);
    if (typeof req.request_id !== "string" || !req.request_id) throw new ChioError("error", `chio: approval ${id} names no call`);
    return req.request_id;
  }

  /** One GET /v1/calls/{id}, long-polling for waitMs. */
  async #getCall(requestId: string, waitMs: number, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    let path = "/v1/calls/" + encodeURIComponent(requestId);
    if (waitMs > 0) path += `?wait=${Math.floor(waitMs)}ms`;
    const { data } = await this.#t.send("GET", path, undefined, this.#t.readAuth(requestId), [200], waitMs + POLL_MARGIN_MS, signal);
    if (!isObject(data)) throw new ChioError("error", "chio: bad response from chiod: not an object");
    checkNames(data, requestId, 200);
    return data;
  }



}
