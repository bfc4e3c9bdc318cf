/**
 * chiod's answers read as every chio client reads them (the Go SDK's
 * internal/envelope, testdata/sdk/call_outcomes.json).
 *
 * Go's encoding/json matches member names in any letter case and lets a
 * later duplicate win: {"status":"denied","Status":"allowed"} read as
 * allowed there and as denied here, and of {"status":"denied",
 * "status":"allowed"} a parser keeps the first or the last. chiod never
 * sends two members named alike. So an answer whose own objects — its top
 * level and its "approval" — hold two member names that are equal or
 * differ only in letter case (simple folding, casefold.ts) can be read two
 * ways and is refused (a name's lone surrogate compared as U+FFFD, as Go
 * reads it). The members' values (a tool's output) are never
 * looked into: JSON.parse reads them as it does, a later duplicate winning.
 */

import { foldKey } from "./casefold.js";

/** Top-level members whose object is the answer's own, read by the client. */
const NESTED = new Set(["approval"]);

/** A surrogate no pair completes (an escape such as \\ud800): compared as U+FFFD, as Go reads it. */
const LONE_SURROGATE = /[\ud800-\udfff]/gu;

const WS = /[ \t\n\r]*/y;
const SCALAR = /[^,\]}\s]*/y;

/** Two member names alike in text's own objects ('"status" and "Status"'), or undefined. text is valid JSON (JSON.parse read it). */
export function namedAlike(text: string): string | undefined {
  const i = ws(text, 0);
  return text[i] === "{" ? objectNamedAlike(text, i, true) : undefined;
}

/** Two member names alike in the object at i (and, at the top, in its NESTED objects). */
function objectNamedAlike(s: string, i: number, top: boolean): string | undefined {
  const seen = new Map<string, string>();
  i = ws(s, i + 1);
  while (s[i] !== "}") {
    const end = stringEnd(s, i);
    const name = JSON.parse(s.slice(i, end)) as string;
    const key = foldKey(name.replace(LONE_SURROGATE, "\ufffd"));
    const prev = seen.get(key);
    if (prev !== undefined) return `${visible(prev)} and ${visible(name)}`;
    seen.set(key, name);
    i = ws(s, ws(s, end) + 1); // past the ':'
    if (top && NESTED.has(name) && s[i] === "{") {
      const inner = objectNamedAlike(s, i, false);
      if (inner !== undefined) return inner;
    }
    i = ws(s, valueEnd(s, i));
    if (s[i] === ",") i = ws(s, i + 1);
  }
  return undefined;
}

/** A name quoted with non-ASCII escaped ("unit\u017f"), so that look-alikes show. */
function visible(name: string): string {
  return JSON.stringify(name).replace(/[^\x20-\x7e]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

function ws(s: string, i: number): number {
  WS.lastIndex = i;
  WS.exec(s);
  return WS.lastIndex;
}

/** The index just past the string whose opening quote is at i. */
function stringEnd(s: string, i: number): number {
  for (i++; s[i] !== '"'; i++) if (s[i] === "\\") i++;
  return i + 1;
}

/** The index just past the value at i, unread. */
function valueEnd(s: string, i: number): number {
  const c = s[i];
  if (c === '"') return stringEnd(s, i);
  if (c !== "{" && c !== "[") {
    SCALAR.lastIndex = i;
    SCALAR.exec(s);
    return SCALAR.lastIndex;
  }
  let depth = 0;
  do {
    const d = s[i];
    if (d === '"') {
      i = stringEnd(s, i);
      continue;
    }
    if (d === "{" || d === "[") depth++;
    else if (d === "}" || d === "]") depth--;
    i++;
  } while (depth > 0);
  return i;
}
