/**
 * The HTTP every ChioClient request goes through: one chiod, the agent key
 * and bearer that authorize reads, a time limit per request, and the
 * retry loop for reads and token presentation.
 */

import { namedAlike } from "./envelope.js";
import { BadAnswerError, ChioError, ConnectFailedError, apiError, blockedPort, isRetryable, neverConnected, parseRetryAfter } from "./errors.js";
import type { PrivateKey } from "./keys.js";
import { STATUS_PROOF_HEADER, statusProof } from "./signing.js";
import { anySignal, isObject, readBody, sleep } from "./wire.js";

// Any request but a long-poll, and the reconnect pacing through network
// errors and chiod restarts.
export const REQUEST_TIMEOUT_MS = 60_000;
export const RECONNECT_FIRST_MS = 250;
export const RECONNECT_MAX_MS = 5_000;

/** One chiod as one client sees it; set once by ChioClient's constructor. */
export class Transport {
  constructor(
    readonly base: string,
    readonly fetchFn: typeof fetch,
    readonly key: PrivateKey | undefined,
    readonly bearer: string | undefined,
  ) {}

  /** Authorize a read of id: the bearer if set, and a Chio-Proof by the agent key if set (chiod uses the bearer first). */
  readAuth(id: string): Record<string, string> {
    const h: Record<string, string> = {};
    if (this.bearer) h["Authorization"] = "Bearer " + this.bearer;
    if (this.key) h[STATUS_PROOF_HEADER] = statusProof(this.key, id);
    if (!Object.keys(h).length) throw new ChioError("unauthorized", `chio: reading ${id} needs the agent key or a bearer`);
    return h;
  }

  /** One request. Statuses in ok resolve to {status, data}; any other status throws the error chiod's envelope names. */
  async send(
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string>,
    ok: number[] = [200],
    timeoutMs: number = REQUEST_TIMEOUT_MS,
    signal?: AbortSignal,
  ): Promise<{ status: number; data: unknown }> {
    const url = this.base + path;
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
      const resp = await this.fetchFn(url, init);
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

/**
 * fn() until it succeeds, fails in a way asking again will not change, or
 * the deadline passes ("timed_out"). Only reads and token presentation
 * (which the kernel makes single-use) come through here.
 */
export async function retrying<T>(
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
