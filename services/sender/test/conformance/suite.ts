/**
 * The sender conformance suite: what every destination type must do, run against a real peer of the
 * type (an emulator speaking the real protocol, started on loopback by the fixture). One fixture per
 * type, in test/conformance/<type>.test.ts, calls `conformance(fixture)`; see
 * /docs/destination-types.md for how to add a type.
 *
 * Every case goes through the client cache (clients.ts), as the delivery handler does:
 * - success: the body and the metadata arrive exactly as contract-details.md "How each type delivers" says;
 * - each failure class the fixture can provoke, plus timeout and connection_refused for every type;
 * - rotated credentials take effect on the next delivery (the old ones are refused by then);
 * - one client per destination, reused; replaced when config or credentials change; closed when the
 *   destination is forgotten, when it is idle, and when the cache closes;
 * - for types that batch (`Fixture.batch`): deliveries in flight together share requests and each
 *   keeps its own outcome: one refused entry fails alone, an oversize entry goes (and fails) alone,
 *   a throttled or cut-off request fails each of its deliveries, retryable, and the retries deliver
 *   every event exactly once; a full batch never waits, and closing a client sends what waits.
 */
import { createServer } from 'node:net';
import { freePort, listenLocal } from '@switchyard/shared/testing/index.ts';
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
  /** Connections the peer has accepted so far, where it can count them (to show keep-alive reuse). */
  connections?(): number;
  /** The attempt code of a success (default 'OK'; HTTP types answer their status). */
  successCode?: string;
  /** Type-specific checks of one received delivery (content type, routing key, storage class...). */
  checkReceived?(t: Test, r: Received, event: EventRecord, target: Target): void;
}

/** What the suite needs of a type whose client coalesces deliveries into batch requests. */
export interface BatchPeer {
  /** Entries one request takes. */
  maxEntries: number;
  /** Requests the peer has seen from `target`'s credentials. */
  requests(target: Target): number;
  /**
   * The next batch entries whose body contains `marker` are refused in their batch's answer (once
   * each), as the service refuses one entry; answers the reason the outcome must name.
   */
  failEntries(marker: string): FailureReason;
  /**
   * The next `times` requests holding an entry whose body contains `marker` are refused as a whole
   * for what they carry (400, the service's malformed-request code).
   */
  refuseRequests(marker: string, times: number): void;
  /** The next request from `target`'s credentials is cut off unanswered, as a peer going down. */
  hangUp(target: Target): void;
  /** The next request from `target`'s credentials is answered as throttled (the whole request). */
  throttle(target: Target): void;
  /** A string that makes an event too large for one request of the type. */
  oversize(): string;
  /** The type's sender with a batch wait of `waitMs` (to show a full batch does not wait, and close sends). */
  senderWithWait(waitMs: number): TypeSender;
}

export interface Fixture {
  type: DestinationType;
  /** The peer's name, where a type's suite runs against more than one. */
  peer?: string;
  /** Starts the peer on loopback and registers its teardown; throws (failing the suite) when it cannot start. */
  start(t: Test): Promise<Peer>;
  /** Why the peer cannot check credentials at all (an emulator reached without TLS): rotation then only renews the client. */
  credentialsUnchecked?: string;
  /** Classes this type cannot be made to show against its peer, each with the reason why (reported, never silent). */
  cannot?: Partial<Record<FailureReason, string>>;
  /** Type-specific cases (templates, settings), run against the same peer; `deliver` goes through the client cache. */
  cases?: Record<string, (t: Test, peer: Peer, deliver: (target: Target, event: EventRecord) => Promise<Outcome>) => Promise<void>>;
  /** Set for a type that coalesces deliveries into batch requests: the batch cases run too. */
  batch?: (peer: Peer) => BatchPeer;
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
  const server = createServer((s) => s.on('error', () => {}));
  return (await listenLocal(t, server)).port;
}

function newId(target: Target): Target {
  return { ...target, id: `${target.id}_${(++seq).toString(36)}` };
}

export function conformance(fixture: Fixture): void {
  t.test(`${fixture.type} sender conformance${fixture.peer ? ` (${fixture.peer})` : ''}`, async (t) => {
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
      cache.forget(target);
      await cache.sweep();
      t.equal(counts.closed - before.closed, 1, 'forgetting a deleted or disabled destination closes its client');
      t.match(await cache.deliver(input(target, sampleEvent())), { status: 'success' }, 'delivers again after');
      t.equal(counts.opened - before.opened, 2, 'with a new client');
    });

    if (peer.connections) {
      const connections = peer.connections;
      await t.test('connections are kept alive and reused', async (t) => {
        const target = newId(await peer.destination());
        t.match(await cache.deliver(input(target, sampleEvent())), { status: 'success' }, 'the first delivery connects');
        const before = connections();
        for (let i = 0; i < 5; i++) t.match(await cache.deliver(input(target, sampleEvent())), { status: 'success' });
        t.equal(connections() - before, 0, 'five more deliveries, one after the other, open no new connection');
      });
    }

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
      const target = newId(peer.pointAt(await peer.destination(), '127.0.0.1', await freePort()));
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

    if (fixture.batch) await batchCases(t, peer, fixture.batch(peer), cache);

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

/** The n in the data of a received body (sampleEvent's counter), to tell deliveries apart. */
const nOf = (r: Received) => (JSON.parse(r.body) as { n?: number }).n;

async function batchCases(t: Test, peer: Peer, batch: BatchPeer, cache: ReturnType<typeof createClientCache>): Promise<void> {
  const together = (target: Target, events: EventRecord[]) => Promise.all(events.map((e) => cache.deliver(input(target, e))));
  /** Every event arrived exactly once, and nothing else. */
  const exactlyOnce = async (t: Test, target: Target, events: EventRecord[]) => {
    const got = (await peer.received(target)).map(nOf).sort((a, b) => Number(a) - Number(b));
    t.same(
      got,
      events.map((e) => (e.data as { n: number }).n).sort((a, b) => a - b),
      `each of the ${events.length} events arrived exactly once`,
    );
  };

  await t.test('batch: deliveries in flight together share requests, each with its own outcome', async (t) => {
    const target = newId(await peer.destination());
    const events = Array.from({ length: 25 }, () => sampleEvent());
    const before = batch.requests(target);
    const outs = await together(target, events);
    t.ok(
      outs.every((o) => o.status === 'success'),
      'every delivery succeeded',
    );
    const made = batch.requests(target) - before;
    t.ok(made <= Math.ceil(25 / batch.maxEntries), `25 deliveries in ${made} requests (${batch.maxEntries} entries a request)`);
    t.equal(new Set(outs.map((o) => JSON.stringify(o.response_data))).size, 25, 'each outcome names its own message or record');
    await exactlyOnce(t, target, events);
  });

  await t.test('batch: one refused entry fails alone, and its retry delivers it once', async (t) => {
    const target = newId(await peer.destination());
    const marker = `refuse-${Date.now().toString(36)}`;
    const reason = batch.failEntries(marker);
    const events = Array.from({ length: 8 }, () => sampleEvent());
    (events[3] as EventRecord).data = { ...(events[3]?.data as object), marker };
    const outs = await together(target, events);
    t.match(outs[3], { status: 'failed', retryable: true, response_data: { reason } }, JSON.stringify(outs[3]?.response_data));
    t.ok(
      outs.every((o, i) => i === 3 || o.status === 'success'),
      'the other seven succeeded',
    );
    t.match(await cache.deliver(input(target, events[3] as EventRecord)), { status: 'success' }, 'the retry succeeds');
    await exactlyOnce(t, target, events);
  });

  await t.test('batch: a request refused for one entry is sent again an entry a request, and only it fails', async (t) => {
    const target = newId(await peer.destination());
    const marker = `malformed-${Date.now().toString(36)}`;
    // The batch, then the entry alone: refused twice; its retry goes through.
    batch.refuseRequests(marker, 2);
    const events = Array.from({ length: 8 }, () => sampleEvent());
    (events[5] as EventRecord).data = { ...(events[5]?.data as object), marker };
    const outs = await together(target, events);
    t.match(outs[5], { status: 'failed', retryable: true, response_data: { reason: 'rejected' } }, JSON.stringify(outs[5]?.response_data));
    t.ok(
      outs.every((o, i) => i === 5 || o.status === 'success'),
      'the other seven succeeded',
    );
    t.match(await cache.deliver(input(target, events[5] as EventRecord)), { status: 'success' }, 'the retry succeeds');
    await exactlyOnce(t, target, events);
  });

  await t.test('batch: a request refused for what every entry carries fails each, as the destination’s setting', async (t) => {
    const target = newId(await peer.destination());
    const marker = `misfit-${Date.now().toString(36)}`;
    batch.refuseRequests(marker, 1 + 4);
    const events = Array.from({ length: 4 }, () => sampleEvent({ data: { marker } }));
    const outs = await together(target, events);
    for (const o of outs) t.match(o, { status: 'failed', retryable: false, response_data: { reason: 'invalid_config' } });
  });

  await t.test('batch: an oversize entry goes alone, and only it fails', async (t) => {
    const target = newId(await peer.destination());
    const events = Array.from({ length: 5 }, () => sampleEvent());
    const big = sampleEvent({ data: { n: -1, blob: batch.oversize() } });
    const before = batch.requests(target);
    const outs = await together(target, [...events.slice(0, 2), big, ...events.slice(2)]);
    const bigOut = outs[2] as Outcome;
    t.match(bigOut, { status: 'failed', retryable: true, response_data: { reason: 'rejected' } }, JSON.stringify(bigOut.response_data));
    t.ok(
      outs.every((o, i) => i === 2 || o.status === 'success'),
      'the five others succeeded',
    );
    t.ok(batch.requests(target) - before >= 2, 'the oversize entry was not in the others’ request');
    await exactlyOnce(t, target, events);
  });

  await t.test('batch: a throttled request fails each of its deliveries, and they are retried', async (t) => {
    const target = newId(await peer.destination());
    const events = Array.from({ length: 5 }, () => sampleEvent());
    batch.throttle(target);
    const outs = await together(target, events);
    for (const o of outs) t.match(o, { status: 'failed', retryable: true, response_data: { reason: 'throttled' } });
    t.ok(
      outs.every((o) => (o.retryAfterMs ?? 0) > 0),
      'each retry waits as the peer asked',
    );
    const again = await together(target, events);
    t.ok(
      again.every((o) => o.status === 'success'),
      'the retries succeed',
    );
    await exactlyOnce(t, target, events);
  });

  await t.test('batch: the peer going down mid-request fails each of its deliveries, retryable', async (t) => {
    const target = newId(await peer.destination());
    const events = Array.from({ length: 6 }, () => sampleEvent());
    t.match(await cache.deliver(input(target, sampleEvent({ data: { n: 0 } }))), { status: 'success' }, 'a connection is open');
    batch.hangUp(target);
    const outs = await together(target, events);
    for (const o of outs) t.match(o, { status: 'failed', retryable: true }, JSON.stringify(o.response_data));
    t.ok(
      outs.every((o) => ['connection_reset', 'network_error'].includes(String(o.response_data?.reason))),
      `a network failure: ${String(outs[0]?.response_data?.reason)}`,
    );
    const again = await together(target, events);
    t.ok(
      again.every((o) => o.status === 'success'),
      'the retries succeed',
    );
    const got = (await peer.received(target)).map(nOf).filter((n) => n !== 0);
    t.same(
      got.sort((a, b) => Number(a) - Number(b)),
      events.map((e) => (e.data as { n: number }).n),
      'each event arrived exactly once',
    );
  });

  await t.test('batch: a full batch goes at once, and closing a client sends what waits', async (t) => {
    const target = newId(await peer.destination());
    // A wait longer than the deadline: a batch that waited for it would time out.
    const client = batch.senderWithWait(60_000).open(target);
    const deliver = (event: EventRecord) =>
      client.deliver({ event, deliveryMetadata: DELIVERY_METADATA, signal: AbortSignal.timeout(30_000) });
    const full = Array.from({ length: batch.maxEntries }, () => sampleEvent());
    const outs = await Promise.all(full.map(deliver));
    t.ok(
      outs.every((o) => o.status === 'success'),
      `a full batch (${batch.maxEntries}) is sent without waiting`,
    );
    const waiting = Array.from({ length: 3 }, () => sampleEvent());
    const pending = Promise.all(waiting.map(deliver));
    await client.close();
    const closed = await pending;
    t.ok(
      closed.every((o) => o.status === 'success'),
      'close sent the batch that was waiting, and waited for its answer',
    );
    await exactlyOnce(t, target, [...full, ...waiting]);
  });
}
