// An allowed call's answer whose tool_error or execution is not a string
// (a newer chiod's structured error, a proxy's rewrite) cannot be checked:
// it must never read as a success whose output is used. The Go SDK cannot
// decode it (an unreadable answer: outcome unknown for a call, an error
// for a wait); so here.

import { unreadableAnswerTests } from "./answering.js";

const ANSWERS: Record<string, unknown>[] = [
  { status: "allowed", request_id: "req-typed", receipt_id: "rcpt-1", output: { refunded: true }, tool_error: { message: "refund failed" } },
  { status: "allowed", request_id: "req-typed", receipt_id: "rcpt-1", output: { refunded: true }, execution: { state: "unknown" } },
  { status: "allowed", request_id: "req-typed", receipt_id: "rcpt-1", output: { refunded: true }, execution: 3 },
];

await unreadableAnswerTests(
  ANSWERS.map((a) => [`an allowed answer's ${JSON.stringify(a["tool_error"] ?? a["execution"])}`, a]),
  true,
);
