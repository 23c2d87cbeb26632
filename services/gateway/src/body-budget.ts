/**
 * Request bodies held at once. A gateway holds at most API_MAX_INFLIGHT_BYTES of request bodies,
 * counted as their bytes arrive (not by what Content-Length announces), so a client that announces
 * a megabyte and sends a byte holds a byte. A tenant credential holds at most a quarter of the
 * budget (at least one full body), so one tenant's clients cannot fill it for everyone; the admin
 * key, the operator's own product, may use all of it. A body that is not complete within
 * API_BODY_TIMEOUT_MS is answered 408 REQUEST_TIMEOUT and its connection closed. Bytes are given
 * back when the answer goes out. Past the budget: 503 SERVICE_UNAVAILABLE with Retry-After: 1,
 * nothing changed; one body always fits when nothing else is held.
 *
 * A body that had fully arrived by the time its route was found (most bodies: they come in the
 * same packets as their headers) is counted at once, whole; only one still arriving is counted
 * through a stream, chunk by chunk, under the timer (docs/performance.md, "Gateway").
 */
import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { ByteBudget } from '@switchyard/shared/bus/byte-budget.ts';

export interface BodyBudgetOptions {
  maxInFlightBytes: number;
  bodyTimeoutMs: number;
  /** The largest body a route takes (what a tenant may always hold). */
  bodyLimit: number;
}

const full = () =>
  new AppError('SERVICE_UNAVAILABLE', 'The gateway holds as many request bytes as it may; nothing was accepted. Retry shortly.');

export function registerBodyBudget(app: FastifyInstance, o: BodyBudgetOptions): void {
  const bodies = new ByteBudget(o.maxInFlightBytes);
  const perTenantMax = Math.max(o.bodyLimit, Math.floor(o.maxInFlightBytes / 4));
  const byTenant = new Map<string, number>();

  app.addHook('preParsing', async (req, reply, payload) => {
    const length = req.headers['content-length'];
    if ((length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined) return payload;
    const tenant = req.principal?.kind === 'tenant' ? req.principal.tenantId : null;
    let held = 0;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const release = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      bodies.give(held);
      if (tenant !== null) {
        const left = (byTenant.get(tenant) ?? 0) - held;
        if (left > 0) byTenant.set(tenant, left);
        else byTenant.delete(tenant);
      }
    };
    const refuse = (err: AppError) => {
      // The rest of the body is never read: the connection cannot carry another request.
      void reply.header('connection', 'close');
      if (err.code === 'SERVICE_UNAVAILABLE') void reply.header('retry-after', '1');
      return err;
    };
    /** Holds `n` more bytes of this body; false when the budget (or the tenant's share) is full. */
    const take = (n: number): boolean => {
      const tenantHeld = tenant === null ? 0 : (byTenant.get(tenant) ?? 0);
      if ((tenant !== null && tenantHeld > 0 && tenantHeld + n > perTenantMax) || !bodies.tryTake(n)) return false;
      held += n;
      if (tenant !== null) byTenant.set(tenant, tenantHeld + n);
      return true;
    };
    reply.raw.once('close', release);
    // Already here in full: what it holds is known now.
    if (arrivedWhole(req, payload)) {
      if (!take(payload.readableLength)) throw refuse(full());
      return payload;
    }
    const counted = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        if (!take(chunk.length)) {
          cb(refuse(full()));
          return;
        }
        cb(null, chunk);
      },
      flush(cb) {
        clearTimeout(timer);
        cb();
      },
    });
    timer = setTimeout(() => {
      counted.destroy(refuse(new AppError('REQUEST_TIMEOUT', `The request body did not arrive within ${o.bodyTimeoutMs} ms.`)));
    }, o.bodyTimeoutMs);
    payload.on('error', (err) => counted.destroy(err));
    // Fastify's body limit reads these: the bytes received so far, as the original stream counts them.
    return Object.defineProperty(payload.pipe(counted), 'receivedEncodedLength', {
      get: () => (payload as { receivedEncodedLength?: number }).receivedEncodedLength,
    });
  });
}

/**
 * Whether all of a request's body is already read from its connection: the request's own stream
 * has ended, or holds every byte its Content-Length announced. A body sent in the packets of its
 * headers is read in the same turn of the event loop, so it is all here once an async hook before
 * this one (authentication) has run; Node marks the request complete only later, so holding every
 * announced byte is what tells it.
 */
function arrivedWhole(req: FastifyRequest, payload: { readableLength: number }): boolean {
  if (payload !== req.raw) return false;
  if (req.raw.complete) return true;
  const length = req.headers['content-length'];
  return length !== undefined && payload.readableLength === Number(length);
}
