/**
 * Whether a call attempt cut short by the caller (its signal or timeout)
 * was written to chiod. fetch does not say: an abort while the connection
 * is still being made and one after the request was written reject alike.
 * undici, Node's fetch, publishes both steps on its diagnostics channels
 * (a documented, public interface): "undici:request:create" when it takes
 * a request, and "undici:client:sendHeaders" synchronously just before it
 * writes one (never once the request was aborted). An attempt whose
 * request undici took and never started to write, when the caller's abort
 * came, was not sent, and is then never written (undici drops an aborted
 * request before writing it).
 *
 * Only positive evidence counts: an attempt undici was not seen taking (a
 * fetch passed in ClientOptions, an abort before undici got the request,
 * instrumentation that changed) is "may have been sent". Only plain http
 * is watched: over https undici may speak HTTP/2, whose writes are not
 * published. Attempts are matched by origin, method, path and
 * Idempotency-Key; two attempts of the same request id in flight at once
 * share what either saw, so a write by one counts for both.
 */

import { subscribe } from "node:diagnostics_channel";

/** The fields of an undici request that are read here. */
interface UndiciRequest {
  origin?: unknown;
  method?: unknown;
  path?: unknown;
  headers?: unknown;
}

export class SendWatch {
  #taken = false; // undici took a request matching this attempt
  #written = false; // undici started writing one
  readonly #requests = new WeakSet<object>();

  constructor(
    readonly origin: string,
    readonly path: string,
    readonly idempotencyKey: string,
  ) {}

  /** Whether the attempt's request is certain never to have been written. */
  get neverWritten(): boolean {
    return this.#taken && !this.#written;
  }

  /** Stop watching (after the attempt settled). */
  close(): void {
    watches.delete(this);
  }

  matches(req: UndiciRequest): boolean {
    if (req.method !== "POST" || req.path !== this.path) return false;
    let origin: string;
    try {
      origin = new URL(String(req.origin)).origin;
    } catch {
      return false;
    }
    if (origin !== this.origin || !Array.isArray(req.headers)) return false;
    const h = req.headers as unknown[];
    for (let i = 0; i + 1 < h.length; i += 2) {
      if (String(h[i]).toLowerCase() === "idempotency-key" && h[i + 1] === this.idempotencyKey) return true;
    }
    return false;
  }

  taken(req: object): void {
    this.#taken = true;
    this.#requests.add(req);
  }

  written(req: object): boolean {
    if (!this.#requests.has(req)) return false;
    this.#written = true;
    return true;
  }
}

const watches = new Set<SendWatch>();
let subscribed = false;

/**
 * Watch the attempt that is about to POST to url (a plain http URL) with
 * this Idempotency-Key; undefined when it cannot be watched (https).
 */
export function watchSend(url: string, idempotencyKey: string): SendWatch | undefined {
  const u = new URL(url);
  if (u.protocol !== "http:") return undefined;
  if (!subscribed) {
    subscribed = true;
    subscribe("undici:request:create", (msg) => {
      const req = (msg as { request?: UndiciRequest } | null)?.request;
      if (!req) return;
      for (const w of watches) if (w.matches(req)) w.taken(req);
    });
    subscribe("undici:client:sendHeaders", (msg) => {
      const req = (msg as { request?: object } | null)?.request;
      if (!req) return;
      for (const w of watches) {
        // A write of a matching request this watch did not see taken (taken
        // before the watch began) counts too.
        if (w.matches(req as UndiciRequest)) w.taken(req);
        w.written(req);
      }
    });
  }
  const w = new SendWatch(u.origin, u.pathname + u.search, idempotencyKey);
  watches.add(w);
  return w;
}
