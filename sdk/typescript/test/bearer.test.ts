// A bearer that cannot go in an Authorization header (a control character
// in it) made fetch throw, which came back as "transport": awaitApproval
// retried it until its deadline (forever without one), and the error's
// message quoted the token. The client refuses it when made, with
// "bad_request" naming no part of the token; surrounding whitespace (a
// token file's newline) is trimmed, as fetch trims header values. Python's
// test_bearer.py is the same test.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ChioClient, ChioError } from "@chio-protocol/sdk";

test("a bearer with a control character is refused without quoting it", () => {
  for (const bearer of ["s3cr3t\ntoken", "s3cr3t\r\nX-Injected: 1", "s3cr3t\x00token", "s3cr3t\u00e9token"]) {
    let err: unknown;
    try {
      new ChioClient({ url: "http://127.0.0.1:7420", bearer });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ChioError, `${JSON.stringify(bearer)} accepted: ${String(err)}`);
    assert.equal(err.code, "bad_request", err.message);
    assert.ok(!err.message.includes("s3cr3t"), `the error quotes the token: ${err.message}`);
  }
});
