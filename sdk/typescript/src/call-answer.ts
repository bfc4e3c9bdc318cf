/**
 * A call's answer (POST /v1/calls), and what callTool reports when its
 * attempts end early: read as chiod sends it, or "outcome_unknown".
 */

import { BadAnswerError, ChioError, NotSentError, apiError } from "./errors.js";
import { REQUEST_TIMEOUT_MS, type Transport } from "./transport.js";
import { isObject } from "./wire.js";

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
export function checkNames(state: Record<string, unknown>, requestId: string, status: number): void {
  if (state["request_id"] !== requestId) {
    const named = JSON.stringify(state["request_id"] ?? null).slice(0, 140);
    throw new BadAnswerError(
      `chio: bad response from chiod (${status}): the state (status ${JSON.stringify(String(state["status"] ?? "")).slice(0, 40)}) of call ${named}, not of ${requestId}`,
      status,
    );
  }
}

/**
 * callTool's error when its signal or timeout ended it: "outcome_unknown"
 * if some attempt may have reached chiod without its answer reaching us,
 * else a NotSentError (every attempt failed before its connection was
 * ready, or was turned away by chiod).
 */
export function callEnded(requestId: string, why: unknown, mayHaveRun: boolean): ChioError {
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

/** One attempt of a call: its state as chiod answered it, or the error. */
export async function postCall(t: Transport, requestId: string, body: string, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
  let status: number, data: unknown;
  try {
    try {
      ({ status, data } = await t.send("POST", "/v1/calls", body, { "Idempotency-Key": requestId }, [200, 202, 403], REQUEST_TIMEOUT_MS, signal));
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
