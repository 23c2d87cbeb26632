/**
 * The sender conformance suite: what every destination type must do, run against a real peer of the
 * type (an emulator speaking the real protocol, started on loopback by the fixture). One fixture per
 * type, in test/conformance/<type>.test.ts, calls `conformance(fixture)`; see
 * /docs/architecture.md "Delivery by type" for how to add a type.
 *
 * Every case goes through the client cache (clients.ts), as the delivery handler does:
 * - success: the body and the metadata arrive exactly as contract-details.md "How each type delivers" says;
 * - each failure class the fixture can provoke, plus timeout and connection_refused for every type;
 * - rotated credentials take effect on the next delivery (the old ones are refused by then);
 * - one client per destination, reused; replaced when config or credentials change; closed when the
 *   destination is forgotten, when it is idle, and when the cache closes.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { DestinationType, EventRecord } from '@switchyard/shared/model/index.ts';
import t, { type Test } from 'tap';
import { createClientCache } from '../../src/clients.ts';
import { metadataOf } from '../../src/metadata.ts';
import type { Client, DeliveryInput, FailureReason, Outcome, Target, TypeSender } from '../../src/sender.ts';

/** One delivery as the peer holds it, decoded from the medium by the fixture. */
export interface Received {
  /** The body bytes as delivered (for kinesis, the `data` of the record). */
  body: string;
  /** The metadata map as the medium carries it (headers, attributes, object metadata...). */
  metadata: Record<string, string>;
  /** Whatever else the fixture checks in `checkReceived` (content type, routing key, key...). */
  extra?: Record<string, unknown>;
}

/** A failure the fixture provokes: a target that fails for that reason, and optionally what it expects. */
export interface FailureCase {
  target: Target;
  /** Also expected of the outcome, for example `retryable: false` or a `retryAfterMs` bound. */
  expect?: Partial<Pick<Outcome, 'retryable' | 'code'>> & { minRetryAfterMs?: number };
  /** Puts the peer back as it was (run after the case, whatever happened). */
  cleanup?: () => Promise<void>;
}

export interface Peer {
  /** The type's sender, built to reach this peer (EGRESS_ALLOW admits loopback). */
  sender: TypeSender;
  /** A fresh destination that works: its own queue, exchange, stream, bucket or source. */
  destination(): Promise<Target>;
  /** What `target` received so far, oldest first. */
  received(target: Target): Promise<Received[]>;
  /** The destination pointed at another host and port (for the timeout and connection_refused cases). */
  pointAt(target: Target, host: string, port: number): Target;
  /**
   * Failure classes beyond timeout and connection_refused, each a target that fails for that reason
   * (unauthorized, not_found, invalid_config, throttled, ...). Async: a case may arrange the peer.
   */
  failures: Partial<Record<FailureReason, (good: Target) => Promise<FailureCase>>>;
  /**
   * Changes the destination's credentials at the peer: afterwards the old ones are refused. Returns
   * the destination with the new credentials (the same id).
   */
  rotate(good: Target): Promise<Target>;
  /** The attempt code of a success (default 'OK'; HTTP types answer their status). */
  successCode?: string;
  /** Type-specific checks of one received delivery (content type, routing key, storage class...). */
  checkReceived?(t: Test, r: Received, event: EventRecord, target: Target): void;
}

export interface Fixture {
  type: DestinationType;
  /** Starts the peer on loopback and registers its teardown; throws (failing the suite) when it cannot start. */
  start(t: Test): Promise<Peer>;
  /** Why the peer cannot check credentials at all (an emulator reached without TLS): rotation then only renews the client. */
  credentialsUnchecked?: string;
  /** Classes this type cannot be made to show against its peer, each with the reason why (reported, never silent). */
  cannot?: Partial<Record<FailureReason, string>>;
  /** Type-specific cases (templates, settings), run against the same peer; `deliver` goes through the client cache. */
  cases?: Record<string, (t: Test, peer: Peer, deliver: (target: Target, event: EventRecord) => Promise<Outcome>) => Promise<void>>;
}

/** Failure classes every type must show (timeout and connection_refused are provoked by the suite itself). */
export const REQUIRED_FAILURES: readonly FailureReason[] = ['unauthorized', 'not_found', 'throttled', 'invalid_config'];

let seq = 0;
export function sampleEvent(overrides: Partial<EventRecord> = {}): EventRecord {
  seq++;
  return {
    id: `evt_conf_${Date.now().toString(36)}_${seq}`,
    tenant_id: 'acme',
    topic: 'user.created',
    time: '2026-11-22T10:00:00.123Z',
    eligible_for_retry: true,
    metadata: { source: 'crm', priority: 3, topic: 'from-event-metadata' },
    data: { name: 'Zoë', nested: { list: [1, 2.5, 'x'], unicode: '☃', empty: {} }, n: seq },
    ...overrides,
  };
}

export const DELIVERY_METADATA = { env: 'prod', source: 'overridden-by-event' } as const;

function input(target: Target, event: EventRecord, timeoutMs = 10_000): DeliveryInput {
  return {
    event,
    destination: {
      id: target.id,
      tenant_id: target.tenant_id,
      type: target.type,
      config: { ...target.config },
      credentials: null,
      delivery_metadata: null,
    },
    credentials: target.credentials,
    deliveryMetadata: DELIVERY_METADATA,
    signal: AbortSignal.timeout(timeoutMs),
  };
}

/** A sender whose clients are counted: opened, closed. */
function counted(sender: TypeSender) {
  const counts = { opened: 0, closed: 0 };
  const wrapped: TypeSender = {
    open(target) {
      counts.opened++;
      const c: Client = sender.open(target);
      return {
        deliver: (d) => c.deliver(d),
        async close() {
          counts.closed++;
          await c.close();
        },
      };
    },
    close: () => sender.close(),
  };
  return { wrapped, counts };
}

/** A TCP server that accepts connections and never answers: every delivery to it must time out. */
async function blackHole(t: Test): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return (server.address() as { port: number }).port;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function newId(target: Target): Target {
  return { ...target, id: `${target.id}_${(++seq).toString(36)}` };
}

export function conformance(fixture: Fixture): void {
  t.test(`${fixture.type} sender conformance`, async (t) => {
    const peer = await fixture.start(t);
    const { wrapped, counts } = counted(peer.sender);
    const cache = createClientCache(wrapped);
    let cacheClosed = false;
    t.teardown(async () => {
      if (!cacheClosed) await cache.close();
    });

    await t.test('success: the body and metadata exactly as the contract says', async (t) => {
      const target = await peer.destination();
      const event = sampleEvent();
      const out = await cache.deliver(input(target, event));
      t.match(out, { status: 'success', code: peer.successCode ?? 'OK' }, JSON.stringify(out.response_data));
      const got = await peer.received(target);
      t.equal(got.length, 1, 'one delivery arrived');
      const r = got[0];
      if (!r) return;
      t.equal(r.body, JSON.stringify(event.data), 'the body is the event data, byte for byte');
      t.same(r.metadata, metadataOf(event, DELIVERY_METADATA), 'system fields, then delivery_metadata, then event metadata');
      t.equal(r.metadata.topic, 'from-event-metadata', 'event metadata wins');
      t.equal(r.metadata.source, 'crm', 'event metadata wins over delivery_metadata');
      t.equal(r.metadata.timestamp, String(Math.floor(Date.parse(event.time) / 1000)), 'timestamp in unix seconds');
      peer.checkReceived?.(t, r, event, target);
    });

    await t.test('a client per destination, reused, replaced on change, closed when forgotten', async (t) => {
      const target = newId(await peer.destination());
      const before = { ...counts };
      for (let i = 0; i < 3; i++) t.match(await cache.deliver(input(target, sampleEvent())), { status: 'success' });
      t.equal(counts.opened - before.opened, 1, 'three deliveries, one client');
      // Deliveries of one destination may overlap: still one client.
      const together = await Promise.all([1, 2, 3].map(() => cache.deliver(input(target, sampleEvent()))));
      t.ok(
        together.every((o) => o.status === 'success'),
        'overlapping deliveries succeed',
      );
      t.equal(counts.opened - before.opened, 1, 'overlapping deliveries share the client');
      t.equal((await peer.received(target)).length, 6, 'all six arrived');
      cache.forget(target.id);
      await cache.sweep();
      t.equal(counts.closed - before.closed, 1, 'forgetting a deleted or disabled destination closes its client');
      t.match(await cache.deliver(input(target, sampleEvent())), { status: 'success' }, 'delivers again after');
      t.equal(counts.opened - before.opened, 2, 'with a new client');
    });

    await t.test('rotated credentials take effect on the next delivery', async (t) => {
      const target = await peer.destination();
      t.match(await cache.deliver(input(target, sampleEvent())), { status: 'success' }, 'before rotation');
      const before = { ...counts };
      const rotated = await peer.rotate(target);
      t.equal(rotated.id, target.id, 'the same destination');
      // A new client with the old credentials (a client already connected may stay so: a broker need not drop it).
      const old = peer.sender.open(target);
      const stale = await old.deliver({ event: sampleEvent(), deliveryMetadata: DELIVERY_METADATA, signal: AbortSignal.timeout(10_000) });
      await old.close();
      if (fixture.credentialsUnchecked) {
        // The peer checks no credentials (the fixture says why): the change still makes a new client.
        t.comment(`${fixture.type}: the old credentials cannot be refused here: ${fixture.credentialsUnchecked}`);
        t.match(stale, { status: 'success' }, 'the peer checks no credentials');
      } else {
        t.match(stale, { status: 'failed', response_data: { reason: 'unauthorized' } }, 'the old credentials are refused now');
      }
      const fresh = await cache.deliver(input(rotated, sampleEvent()));
      t.match(fresh, { status: 'success' }, `the new ones work at once: ${JSON.stringify(fresh.response_data)}`);
      t.equal(counts.opened - before.opened, 1, 'a new client for the new credentials');
      await cache.sweep();
      t.equal(counts.closed - before.closed, 1, 'the old client is closed');
    });

    await t.test('timeout honoured: a peer that never answers', async (t) => {
      const port = await blackHole(t);
      const target = newId(peer.pointAt(await peer.destination(), '127.0.0.1', port));
      const started = Date.now();
      const out = await cache.deliver(input(target, sampleEvent(), 700));
      const took = Date.now() - started;
      t.match(
        out,
        { status: 'failed', code: 'ERR', retryable: true, response_data: { reason: 'timeout' } },
        JSON.stringify(out.response_data),
      );
      t.ok(took < 5_000, `gave up at the deadline (${took} ms for a 700 ms deadline)`);
    });

    await t.test('connection_refused: nothing listens', async (t) => {
      const target = newId(peer.pointAt(await peer.destination(), '127.0.0.1', await closedPort()));
      const out = await cache.deliver(input(target, sampleEvent(), 5_000));
      t.match(
        out,
        { status: 'failed', code: 'ERR', retryable: true, response_data: { reason: 'connection_refused' } },
        JSON.stringify(out.response_data),
      );
    });

    for (const reason of REQUIRED_FAILURES) {
      const provoke = peer.failures[reason];
      if (!provoke) {
        const why = fixture.cannot?.[reason];
        t.ok(why, `${reason}: the fixture provokes it, or says why the type cannot show it`);
        if (why) t.comment(`${fixture.type} cannot show ${reason}: ${why}`);
        continue;
      }
      await t.test(`failure: ${reason}`, async (t) => {
        const { target, expect, cleanup } = await provoke(await peer.destination());
        if (cleanup) t.teardown(cleanup);
        const out = await cache.deliver(input(newId(target), sampleEvent()));
        t.match(out, { status: 'failed', response_data: { reason } }, JSON.stringify(out.response_data));
        const message = out.response_data?.message;
        t.ok(typeof message === 'string' && message.length > 0, `the peer's message is kept: ${String(message)}`);
        t.equal(out.retryable, expect?.retryable ?? reason !== 'invalid_config', 'retried unless the configuration can never work');
        if (expect?.code) t.equal(out.code, expect.code);
        if (expect?.minRetryAfterMs !== undefined) {
          t.ok((out.retryAfterMs ?? 0) >= expect.minRetryAfterMs, `the retry waits as the peer asked (${out.retryAfterMs} ms)`);
        }
      });
    }
    for (const [reason, provoke] of Object.entries(peer.failures)) {
      if (REQUIRED_FAILURES.includes(reason as FailureReason) || !provoke) continue;
      await t.test(`failure: ${reason}`, async (t) => {
        const { target, cleanup } = await provoke(await peer.destination());
        if (cleanup) t.teardown(cleanup);
        const out = await cache.deliver(input(newId(target), sampleEvent()));
        t.match(out, { status: 'failed', response_data: { reason } }, JSON.stringify(out.response_data));
      });
    }

    for (const [name, run] of Object.entries(fixture.cases ?? {})) {
      await t.test(name, (t) => run(t, peer, (target, event) => cache.deliver(input(target, event))));
    }

    await t.test('idle clients are closed, and every client when the cache closes', async (t) => {
      const idle = createClientCache(counted(peer.sender).wrapped, { idleMs: 0 });
      const target = newId(await peer.destination());
      t.match(await idle.deliver(input(target, sampleEvent())), { status: 'success' });
      t.equal(idle.size, 1);
      await new Promise((r) => setTimeout(r, 5));
      await idle.sweep();
      t.equal(idle.size, 0, 'an idle client is closed');
      const target2 = newId(await peer.destination());
      t.match(await cache.deliver(input(target2, sampleEvent())), { status: 'success' });
      const open = counts.opened - counts.closed;
      t.ok(open >= 1, `${open} clients open before close`);
      cacheClosed = true;
      await cache.close();
      t.equal(counts.closed, counts.opened, 'every client opened was closed');
    });
  });
}
