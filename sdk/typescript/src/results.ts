/**
 * What a call comes to: Allowed, PendingApproval or ToolDenied, told apart
 * by `status` (or isAllowed / isPendingApproval / isToolDenied). A denial
 * is a result, not an error.
 */

import { ChioError } from "./errors.js";

/** What the deciding human signed, when one decided. */
export interface ApprovalInfo {
  /** "ed25519:…" key. */
  approver: string;
  /** Display name from the policy ("" if none). */
  approverName: string;
  /** The approver's signed note ("" if none). */
  note: string;
  /** The edited arguments, when a human approved an amended call. */
  amendedArguments?: unknown;
  /**
   * Whether the human amended the call (chiod's `amended`; as the Go SDK's
   * Amended and Python's approval.amended): the tool ran, or was denied,
   * with `amendedArguments`, not the arguments the call sent.
   */
  amended: boolean;
}

/**
 * What became of an allowed call at its tool: it succeeded, the tool ran and
 * reported a failure, the tool certainly never saw the call, or it may or
 * may not have run it.
 */
export type Execution = "succeeded" | "tool_error" | "not_delivered" | "unknown";

/**
 * The call was allowed and sent to its tool. Check `failed`: the tool
 * failed, was never reached, or its outcome is unknown (`execution` says
 * which, `toolError` says why); `output` means something only when it did
 * not fail.
 */
export interface Allowed {
  status: "allowed";
  requestId: string;
  /** The final receipt: for a failure, the "incomplete" one that records it. */
  receiptId: string;
  /** The tool's output, parsed JSON. */
  output: unknown;
  toolError?: string;
  /** What became of the call at its tool; undefined if chiod did not say. */
  execution?: Execution;
  /** Whether the tool did not succeed (as the Go SDK's Allowed.Failed). */
  failed: boolean;
  /** Set when the call waited for a human. */
  approvalRequestId?: string;
  approval?: ApprovalInfo;
}

/**
 * The call has not ended yet. Usually it is parked until a human decides:
 * persist requestId (or approvalRequestId) and pass it to awaitApproval,
 * from this process or another. awaitApproval(requestId) works in every
 * case, including `running` without an approvalRequestId.
 *
 * status() also reports a call that was decided and whose tool is still
 * running this way, with `running: true`: approvalRequestId is then ""
 * when no human was ever involved (the call was allowed outright), or the
 * approval a human already granted. callTool never returns one without an
 * approvalRequestId: it waits for such a call's outcome.
 */
export interface PendingApproval {
  status: "pending_approval";
  requestId: string;
  /** "" when `running` and no human was involved. */
  approvalRequestId: string;
  /**
   * Decided (allowed, or approved) and the tool is running; no human
   * decision is awaited. awaitApproval(requestId) returns its outcome.
   * Always set by the SDK (optional only so that older literals compile).
   */
  running?: boolean;
  /** When the request expires; undefined if chiod did not say. */
  deadline?: Date;
  /** What the approver is shown. */
  summary: string;
  /** The "incomplete" receipt. */
  receiptId: string;
}

/** A guard, a human or a deadline said no ("denied"), or the call was cancelled. */
export interface ToolDenied {
  status: "denied" | "cancelled";
  requestId: string;
  receiptId: string;
  reason: string;
  /** e.g. "capability-scope", "human-approval", "approval-timeout". */
  guard: string;
  approvalRequestId?: string;
  approval?: ApprovalInfo;
}

export type CallResult = Allowed | PendingApproval | ToolDenied;

export function isAllowed(r: CallResult): r is Allowed {
  return r.status === "allowed";
}

export function isPendingApproval(r: CallResult): r is PendingApproval {
  return r.status === "pending_approval";
}

export function isToolDenied(r: CallResult): r is ToolDenied {
  return r.status === "denied" || r.status === "cancelled";
}

/**
 * Map chiod's call state (POST /v1/calls, GET /v1/calls/{id}) to a result.
 * An unknown status is an error: failing closed, it is never taken for an allow.
 */
export function fromState(st: Record<string, unknown>): CallResult {
  const s = (k: string): string => stringMember(st, k, k);
  const status = st["status"];
  const approval = approvalInfo(st["approval"]);
  const common = { requestId: s("request_id"), receiptId: s("receipt_id") };
  const extra = { ...(s("approval_request_id") ? { approvalRequestId: s("approval_request_id") } : {}), ...(approval ? { approval } : {}) };
  switch (status) {
    case "allowed": {
      const toolError = s("tool_error");
      const execution = s("execution") as Execution | "";
      return {
        status,
        ...common,
        output: st["output"] ?? null,
        ...(toolError ? { toolError } : {}),
        ...(execution ? { execution } : {}),
        failed: toolError !== "" || (execution !== "" && execution !== "succeeded"),
        ...extra,
      };
    }
    case "pending_approval":
    case "dispatching": {
      // Dispatching: allowed or approved, the tool is running; nothing to
      // show yet. With no approval id no human is involved: `running` says
      // so, and awaitApproval(requestId) works either way. (callTool waits
      // out one that never waited for a human rather than report it.)
      const dl = st["deadline"];
      return {
        status: "pending_approval",
        ...common,
        approvalRequestId: s("approval_request_id"),
        running: status === "dispatching",
        ...(typeof dl === "number" && dl > 0 ? { deadline: new Date(dl * 1000) } : {}),
        summary: s("summary"),
      };
    }
    case "denied":
    case "cancelled":
      return { status, ...common, reason: s("reason"), guard: s("guard"), ...extra };
  }
  throw new ChioError("error", `chio: call ${common.requestId}: unknown status ${JSON.stringify(status)} from chiod`);
}

/**
 * A member chiod sends as a string ("" when absent or null). Anything else
 * (a tool_error object, an execution number) cannot be checked: the answer
 * is refused, as the Go SDK cannot decode it, never read as absent (a
 * success, no approval, not amended).
 */
function stringMember(o: Record<string, unknown>, k: string, name: string): string {
  const v = o[k];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw mistyped(name, v, "a string");
  return v;
}

function mistyped(name: string, v: unknown, want: string): ChioError {
  return new ChioError("error", `chio: bad response from chiod: ${name} is ${JSON.stringify(v)?.slice(0, 100)}, not ${want}`);
}

function approvalInfo(a: unknown): ApprovalInfo | undefined {
  if (a === undefined || a === null) return undefined;
  if (typeof a !== "object" || Array.isArray(a)) throw mistyped("approval", a, "an object");
  const o = a as Record<string, unknown>;
  if (o["amended"] !== undefined && o["amended"] !== null && typeof o["amended"] !== "boolean") throw mistyped("approval.amended", o["amended"], "a boolean");
  const str = (k: string): string => stringMember(o, k, "approval." + k);
  if (!str("approver")) return undefined;
  return {
    approver: str("approver"),
    approverName: str("approver_display_name"),
    note: str("note"),
    // Arguments present mean an amendment whatever the flag says.
    amended: o["amended"] === true || (o["amended_arguments"] !== undefined && o["amended_arguments"] !== null),
    ...(o["amended_arguments"] !== undefined ? { amendedArguments: o["amended_arguments"] } : {}),
  };
}
