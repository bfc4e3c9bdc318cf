/**
 * Approval requests as an agent or approver tooling reads and answers them:
 * ChioClient's approval, respond, cancel and pending (documented there).
 */

import type { ApprovalRequest } from "./approver.js";
import { canonicalize } from "./canon.js";
import { ChioError } from "./errors.js";
import { checkApprovalId } from "./ids.js";
import { fromState, type ToolDenied } from "./results.js";
import { cancelProof, STATUS_PROOF_HEADER } from "./signing.js";
import { REQUEST_TIMEOUT_MS, type Transport } from "./transport.js";
import type { RespondResult } from "./types.js";
import { isObject, tokenText } from "./wire.js";

/** ChioClient.approval: one approval request, checked to be the one asked for. */
export async function getApproval(t: Transport, id: string, signal?: AbortSignal): Promise<ApprovalRequest> {
  checkApprovalId(id);
  const { data } = await t.send("GET", "/approvals/" + encodeURIComponent(id), undefined, t.readAuth(id), [200], REQUEST_TIMEOUT_MS, signal);
  const req = isObject(data) ? data["request"] : undefined;
  if (!isObject(req)) throw new ChioError("error", `chio: approval ${id}: empty answer from chiod`);
  if (req["approval_id"] !== id) {
    // Another request (a proxy or cache that served another answer): it
    // names another call, to await or sign.
    throw new ChioError("error", `chio: approval ${id}: chiod answered with request ${JSON.stringify(req["approval_id"] ?? null).slice(0, 140)}`);
  }
  return req as unknown as ApprovalRequest;
}

/** ChioClient.respond: present a signed token, in one attempt. */
export async function respond(t: Transport, approvalId: string, token: string | Uint8Array | Record<string, unknown>, opts: { channel?: string; signal?: AbortSignal | undefined } = {}): Promise<RespondResult> {
  checkApprovalId(approvalId);
  const { raw } = tokenText(token);
  // Assembled around the signed text, so that it reaches chiod exactly as signed.
  const body = `{"token":${raw}${opts.channel ? `,"channel":${canonicalize(opts.channel)}` : ""}}`;
  const { data } = await t.send("POST", `/approvals/${encodeURIComponent(approvalId)}/respond`, body, {}, [200], REQUEST_TIMEOUT_MS, opts.signal);
  return data as RespondResult;
}

/** ChioClient.cancel: withdraw a parked call, signed by the agent key or as an operator. */
export async function cancel(t: Transport, approvalId: string, reason: string, opts: { signal?: AbortSignal } = {}): Promise<ToolDenied> {
  checkApprovalId(approvalId);
  if (typeof reason !== "string" || !reason.trim()) throw new ChioError("bad_request", "chio: a cancellation needs a reason");
  const body = canonicalize({ reason }); // strict: a lone surrogate is refused here
  let headers: Record<string, string>;
  if (t.key) headers = { [STATUS_PROOF_HEADER]: cancelProof(t.key, approvalId, reason) };
  else if (t.bearer) headers = { Authorization: "Bearer " + t.bearer };
  else throw new ChioError("unauthorized", "chio: cancelling needs the agent key or an admin token (bearer)");
  const { data } = await t.send("POST", "/approvals/" + encodeURIComponent(approvalId) + "/cancel", body, headers, [200], REQUEST_TIMEOUT_MS, opts.signal);
  const result = isObject(data) ? fromState(data) : undefined;
  // The cancelled call of this approval, not another's withdrawal.
  if (result?.status !== "cancelled" || result.approvalRequestId !== approvalId) {
    throw new ChioError("error", `chio: cancel ${approvalId}: unexpected answer from chiod: ${JSON.stringify(data).slice(0, 200)}`);
  }
  return result;
}

/** ChioClient.pending: the pending approval requests a bearer may list. */
export async function pending(t: Transport): Promise<ApprovalRequest[]> {
  if (!t.bearer) throw new ChioError("unauthorized", "chio: listing pending approvals needs a reader token (bearer)");
  const q = new URLSearchParams({ limit: "1000" });
  if (t.key) q.set("subject_id", t.key.publicKey);
  const { data } = await t.send("GET", "/approvals/pending?" + q.toString(), undefined, { Authorization: "Bearer " + t.bearer });
  const list = isObject(data) ? data["approvals"] : undefined;
  return Array.isArray(list) ? (list as ApprovalRequest[]) : [];
}
