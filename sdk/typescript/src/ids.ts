/** chiod's rule for request and approval ids, checked before anything is sent. */

import { ChioError } from "./errors.js";

/** A request id chiod takes: 1..128 characters of [A-Za-z0-9._:-], not "." or ".." (checked apart). */
export const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
export const ID_RULE = '1..128 characters of [A-Za-z0-9._:-], not "." or ".."';

/**
 * chiod's rule for request and approval ids (approval.ValidID), checked
 * before an id goes in a path: "req/1" or ".." would reach another path
 * and read whatever answered there.
 */
export function validId(id: unknown): id is string {
  return typeof id === "string" && REQUEST_ID.test(id) && id !== "." && id !== "..";
}

/** An approval id ("ar-…") within chiod's rule, or "bad_request" before anything is sent. */
export function checkApprovalId(id: unknown, what = "an approval id"): string {
  if (!validId(id) || !id.startsWith("ar-")) throw new ChioError("bad_request", `chio: ${JSON.stringify(id)} is not ${what} (ar-…, ${ID_RULE})`);
  return id;
}
