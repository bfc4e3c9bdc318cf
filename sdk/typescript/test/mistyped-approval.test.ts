// A decided call's approval says whether the human amended it: the tool
// ran (or was denied) with amendedArguments, not the call's arguments. An
// answer whose approval, or its amended flag, or its approver, is not of
// the type chiod sends cannot be checked: it must not read as "not
// amended" or as no approval at all. The Go SDK cannot decode it (outcome
// unknown for a call, an error for a wait); so here.

import { unreadableAnswerTests } from "./answering.js";

const APPROVER = "ed25519:" + "ab".repeat(32);
const base = { status: "allowed", request_id: "req-typed", receipt_id: "rcpt-1", output: { refunded: true }, execution: "succeeded" };
const ANSWERS: [string, Record<string, unknown>][] = [
  ["amended \"true\"", { ...base, approval: { approver: APPROVER, amended: "true" } }],
  ["amended 1", { ...base, approval: { approver: APPROVER, amended: 1 } }],
  ["approver 7", { ...base, approval: { approver: 7, amended: true } }],
  ["approval a string", { ...base, approval: "amended by finance-lead" }],
];

await unreadableAnswerTests(ANSWERS, false);
