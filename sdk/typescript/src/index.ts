/**
 * @chio-protocol/sdk: agents call tools through chiod, handle pending
 * approvals, and sign what chio signs (call proofs, Chio-Proof read and
 * cancel headers, approval tokens) byte for byte as the Go implementation does.
 *
 *   import { ChioClient, isPendingApproval, isToolDenied } from "@chio-protocol/sdk";
 *   const client = ChioClient.fromEnv(); // CHIO_URL, CHIO_KEY, CHIO_CAPABILITY
 *
 * Node's built-in fetch and Ed25519 (node:crypto); no runtime dependencies.
 */

export { ChioClient, DEFAULT_HITL_SERVER, DEFAULT_URL } from "./client.js";
export type { Amount, CallOptions, ClientOptions, GovernedIntent, HITLOptions, RespondResult, ResumeOptions, ToolCall, WaitOptions } from "./types.js";
export {
  isAllowed,
  isPendingApproval,
  isToolDenied,
  type Allowed,
  type ApprovalInfo,
  type CallResult,
  type Execution,
  type PendingApproval,
  type ToolDenied,
} from "./results.js";
export { CanonicalJSONError, ChioError, NotSentError, VoteRecordedError, VoteUncertainError, isRetryable, parseRetryAfter, type CanonicalRefusal, type ChioErrorCode } from "./errors.js";
export { PrivateKey } from "./keys.js";
export { DEFAULT_TOOL_CALL_MAX_AGE_MS, MAX_TOOL_CALL_BODY, TOOL_CALL_DOMAIN, toolCallMessage, verifyToolCall, type VerifyToolCallOptions } from "./toolcall.js";
export {
  DEFAULT_TOKEN_TTL,
  MAX_APPROVAL_TTL,
  signApproval,
  signDenial,
  type ApprovalOptions,
  type ApprovalRequest,
  type Question,
  type TokenOptions,
} from "./approver.js";
export { MAX_DEPTH, RawJSON, canonicalBytes, canonicalize, canonicalizeText, jcs, parseStrict, type JSONValue } from "./canon.js";
export { foldKey } from "./casefold.js";
export {
  CALL_PROOF_DOMAIN,
  CANCEL_PROOF_DOMAIN,
  STATUS_PROOF_DOMAIN,
  STATUS_PROOF_HEADER,
  callProof,
  cancelProof,
  message,
  newId,
  parameterHash,
  signObject,
  statusProof,
  type ProofFields,
} from "./signing.js";
