/**
 * Member names that differ only in letter case (as chiod's internal/canon).
 *
 * Readers of JSON disagree about them: a map (chiod's CEL conditions, JSON
 * pointers, its guards) keeps "units" and "unit\u017f" apart, while a
 * case-insensitive decoder (Go's encoding/json, many frameworks mapping JSON
 * to classes) reads both as the field "units", the last one winning. A
 * signature covers the JCS form, where members are sorted, so member order
 * is not signed and one signed object could mean two things. chiod
 * therefore refuses any object holding two member names equal under Unicode
 * simple case folding (Go's strings.EqualFold: "a"/"A", "s"/"\u017f" (long
 * s), "k"/"\u212a" (Kelvin sign), "σ"/"ς") but not identical; this SDK
 * refuses the same objects first, with the reason "duplicate_key".
 *
 * Simple folding maps one code point to one: "ß" is not "ss", and
 * toLowerCase/toUpperCase (full case mappings) differ from it elsewhere too.
 * So the orbits come from Go's unicode.SimpleFold, generated into
 * casefold-table.ts.
 */

import { ORBITS } from "./casefold-table.js";
import { CanonicalJSONError } from "./errors.js";

/** Code point → the least code point of its orbit, for those not already least. */
const TO_LEAST = new Map<number, number>();
for (const orbit of ORBITS) {
  const least = Math.min(...orbit);
  for (const cp of orbit) if (cp !== least) TO_LEAST.set(cp, least);
}

/**
 * Whether name holds an upper-case ASCII letter or a non-ASCII character. Of
 * two distinct names equal under folding, at least one does: lower-case
 * ASCII folds only with those (internal/vectors' TestCaseFoldTables checks
 * this of every orbit).
 */
export function mayFold(name: string): boolean {
  return /[A-Z]|[^\x00-\x7f]/.test(name);
}

/** A key shared by exactly the names simple case folding equates with name: each code point replaced by the least of its orbit. */
export function foldKey(name: string): string {
  let out = "";
  for (const ch of name) { // by code point: a surrogate pair is one
    const cp = ch.codePointAt(0)!;
    const least = TO_LEAST.get(cp);
    out += least === undefined ? ch : String.fromCodePoint(least);
  }
  return out;
}

/**
 * Refuse two distinct names of one object equal under simple folding. names
 * are one object's member names, all distinct (exact duplicates are refused
 * before). Objects whose names are all free of upper-case ASCII and
 * non-ASCII, the common case, cost one regular-expression test per name.
 */
export function checkMemberCase(names: readonly string[]): void {
  if (!names.some(mayFold)) return;
  const seen = new Map<string, string>();
  for (const name of names) {
    const key = foldKey(name);
    const prev = seen.get(key);
    if (prev !== undefined) {
      throw new CanonicalJSONError(
        "duplicate_key",
        `member names ${visible(prev)} and ${visible(name)} differ only in letter case; chio matches names exactly and refuses such objects`,
      );
    }
    seen.set(key, name);
  }
}

/** A name quoted with non-ASCII escaped ("unit\u017f"), so that look-alikes show. */
function visible(name: string): string {
  return JSON.stringify(name).replace(/[^\x20-\x7e]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}
