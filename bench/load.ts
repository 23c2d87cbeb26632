// Load generator: publishes events over HTTP (one per request, or batches of POST /publish/batch) or
// straight into the events topic with the project's Kafka producer, at a fixed rate or as fast as
// they are accepted, with a bounded number of requests in flight. Every event carries `sent_at`
// (epoch ms, taken just before its request leaves) in its data, from which the receiver computes
// publish -> receive latency. Also the bare ceiling: an undici loop POSTing straight to a receiver.
//
// Used by bench/run.ts; also runs on its own against a running gateway:
//   node bench/load.ts --url http://127.0.0.1:3333 --key $API_KEY --tenants acme --rate 200 --duration 10
//   node bench/load.ts --ceiling http://127.0.0.1:8080 --duration 10
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createKafkaBus } from '../shared/src/kafka/index.ts';
import { TOPIC } from '../shared/src/bus/topics.ts';
import { createLogger } from '../shared/src/log.ts';
import { nowMs, sleep, summarize, type Summary, TimedSamples } from './lib/stats.ts';

export type Via = 'http' | 'batch' | 'kafka';

export interface LoadOptions {
  via: Via;
  gatewayUrl: string;
  apiKey: string;
  kafka?: { brokers: string[]; topicPrefix: string; partitions: number };
  /** The tenant and topic of the n-th event. */
  pick(seq: number): { tenant_id: string; topic: string };
  /** Events per second; undefined publishes as fast as requests are accepted, 0 nothing (idle). */
  ratePerSec?: number;
  /** Requests (or Kafka sends) in flight at once. */
  concurrency: number;
  /** Events per request for `batch` and per send for `kafka`. */
  batchSize: number;
  durationMs: number;
  /** Approximate size of each event's data in bytes. */
  payloadBytes: number;
  /** Asked before each request; false holds new requests back (the runner's cap on outstanding deliveries). */
  gate?: () => boolean;
  /**
   * Publish every event scheduled this long ahead (`deliver_at`), its `sent_at` then its deliver_at:
   * the receiver's publish -> receive latency becomes each delivery's lateness.
   */
  deliverAfterMs?: number;
}

export interface LiveStats {
  requests: number;
  eventsSent: number;
  eventsAccepted: number;
  inFlight: number;
  errors: number;
}

export interface LoadResult extends LiveStats {
  via: Via;
  startedAt: number;
  endedAt: number;
  ratePerSec: number | null;
  rejected: Record<string, number>;
  firstErrors: string[];
  /** Largest delay of a request behind its schedule (fixed rate only), ms. */
  behindMaxMs: number;
  /** Time new requests were held back by the gate, ms. */
  gatedMs: number;
  /** Per request: end time and latency in ms. */
  latency: TimedSamples;
  /** Per request: end time and events accepted. */
  accepted: TimedSamples;
}

export interface LoadHandle {
  stats: LiveStats;
  stop(): void;
  done: Promise<LoadResult>;
}

/** The data of one event, about `bytes` long as JSON, with its send time (or `sentAt`, epoch ms) in it. */
export function eventData(seq: number, bytes: number, sentAt = nowMs()): string {
  const head = `{"sent_at":${sentAt.toFixed(3)},"seq":${seq},"pad":"`;
  return `${head}${'x'.repeat(Math.max(0, bytes - head.length - 2))}"}`;
}

/** An event's JSON; scheduled `afterMs` ahead when given, its data's sent_at then its deliver_at. */
function eventJson(e: { tenant_id: string; topic: string }, seq: number, bytes: number, afterMs?: number): string {
  const head = `{"tenant_id":${JSON.stringify(e.tenant_id)},"topic":${JSON.stringify(e.topic)}`;
  if (afterMs === undefined) return `${head},"data":${eventData(seq, bytes)}}`;
  // Whole milliseconds: deliver_at (RFC 3339) carries no finer time.
  const at = Math.ceil(nowMs() + afterMs);
  return `${head},"deliver_at":"${new Date(at).toISOString()}","data":${eventData(seq, bytes, at)}}`;
}

export function startLoad(o: LoadOptions): LoadHandle {
  const stats: LiveStats = { requests: 0, eventsSent: 0, eventsAccepted: 0, inFlight: 0, errors: 0 };
  const rejected: Record<string, number> = {};
  const firstErrors: string[] = [];
  const latency = new TimedSamples();
  const accepted = new TimedSamples();
  const perRequest = o.via === 'http' ? 1 : Math.max(1, o.batchSize);
  const startedAt = Date.now();
  const t0 = performance.now();
  let stopped = false;
  let seq = 0;
  let slot = 0;
  let behindMaxMs = 0;
  let gatedMs = 0;
  const timer = setTimeout(() => {
    stopped = true;
  }, o.durationMs);

  const pool =
    o.via === 'kafka'
      ? null
      : new Pool(o.gatewayUrl, { connections: o.concurrency, pipelining: 1, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000 });
  const bus =
    o.via === 'kafka' && o.kafka
      ? createKafkaBus({
          brokers: o.kafka.brokers,
          clientId: 'switchyard-bench-load',
          topicPrefix: o.kafka.topicPrefix,
          partitions: o.kafka.partitions,
          replicationFactor: 1,
          log: createLogger('bench-load', 'warn'),
        })
      : null;
  const producerReady = bus ? bus.producer() : null;
  const headers = { authorization: `Bearer ${o.apiKey}`, 'content-type': 'application/json' };

  const retryAfter = (h: string | string[] | undefined) => Math.max(0, Number(Array.isArray(h) ? h[0] : h) || 1) * 1000;
  const fail = (what: string, n: number) => {
    stats.errors += n;
    rejected[what] = (rejected[what] ?? 0) + n;
  };
  const noteError = (err: unknown) => {
    if (firstErrors.length < 5) firstErrors.push((err as Error).message ?? String(err));
  };

  async function one(): Promise<void> {
    const first = seq;
    const events = Array.from({ length: perRequest }, () => o.pick(seq++));
    stats.requests++;
    stats.eventsSent += events.length;
    stats.inFlight++;
    const started = performance.now();
    let ok = 0;
    let errored = false;
    let retryAfterMs = 0;
    try {
      if (o.via === 'kafka') {
        const producer = await (producerReady as NonNullable<typeof producerReady>);
        await producer.send(
          TOPIC.events,
          events.map((e, i) => ({ key: e.tenant_id, value: Buffer.from(eventJson(e, first + i, o.payloadBytes, o.deliverAfterMs)) })),
        );
        ok = events.length;
      } else if (o.via === 'http') {
        const e = events[0] as { tenant_id: string; topic: string };
        const res = await (pool as Pool).request({
          method: 'POST',
          path: '/api/v1/publish',
          headers,
          body: eventJson(e, first, o.payloadBytes, o.deliverAfterMs),
        });
        const text = await res.body.text();
        if (res.statusCode === 202) ok = 1;
        else {
          fail(String(res.statusCode), 1);
          if (res.statusCode === 429) retryAfterMs = retryAfter(res.headers['retry-after']);
          else if (firstErrors.length < 5) firstErrors.push(`${res.statusCode} ${text.slice(0, 200)}`);
        }
      } else {
        const body = `{"events":[${events.map((e, i) => eventJson(e, first + i, o.payloadBytes, o.deliverAfterMs)).join(',')}]}`;
        const res = await (pool as Pool).request({ method: 'POST', path: '/api/v1/publish/batch', headers, body });
        const text = await res.body.text();
        if (res.statusCode === 200) {
          for (const r of (JSON.parse(text) as { results: Array<{ status: number }> }).results) {
            if (r.status === 202) ok++;
            else fail(String(r.status), 1);
          }
        } else {
          fail(String(res.statusCode), events.length);
          if (res.statusCode === 429) retryAfterMs = retryAfter(res.headers['retry-after']);
          else if (firstErrors.length < 5) firstErrors.push(`${res.statusCode} ${text.slice(0, 200)}`);
        }
      }
    } catch (err) {
      fail('error', events.length);
      noteError(err);
      errored = true;
    } finally {
      stats.inFlight--;
    }
    const end = nowMs();
    stats.eventsAccepted += ok;
    latency.add(end, performance.now() - started);
    accepted.add(end, ok);
    // Backs off after a failed request, outside its measured latency; a 429 as its Retry-After says,
    // as a client honouring it does (the admission bound: docs/operations.md, "Overload").
    if (retryAfterMs) await sleep(Math.min(retryAfterMs, Math.max(0, o.durationMs - (Date.now() - startedAt))));
    else if (errored) await sleep(50);
  }

  const requestRate = o.ratePerSec ? o.ratePerSec / perRequest : null;
  async function worker(): Promise<void> {
    while (!stopped) {
      if (o.gate && !o.gate()) {
        const g = performance.now();
        await sleep(5);
        gatedMs += performance.now() - g;
        continue;
      }
      if (requestRate) {
        const due = t0 + ((slot++ + 1) / requestRate) * 1000;
        const wait = due - performance.now();
        if (wait > 0.5) await sleep(wait);
        else behindMaxMs = Math.max(behindMaxMs, -wait);
        if (stopped) break;
      }
      await one();
    }
  }

  const done = (async (): Promise<LoadResult> => {
    // A rate of 0 publishes nothing for the duration (the runner's idle phase).
    if (o.ratePerSec === 0) await new Promise((r) => setTimeout(r, o.durationMs));
    else await Promise.all(Array.from({ length: Math.max(1, o.concurrency) }, () => worker()));
    clearTimeout(timer);
    const endedAt = Date.now();
    await pool?.close();
    await bus?.close();
    return {
      ...stats,
      via: o.via,
      startedAt,
      endedAt,
      ratePerSec: o.ratePerSec ?? null,
      rejected,
      firstErrors,
      behindMaxMs: Math.round(behindMaxMs),
      gatedMs: Math.round(gatedMs),
      latency,
      accepted,
    };
  })();

  return {
    stats,
    stop: () => {
      stopped = true;
    },
    done,
  };
}

export interface CeilingResult {
  url: string;
  concurrency: number;
  seconds: number;
  requests: number;
  ok: number;
  errors: number;
  ratePerSec: number;
  latencyMs: Summary;
}

/** The bare ceiling: POSTs event-sized bodies straight to the receiver, as fast as it answers. */
export async function runCeiling(o: {
  url: string;
  durationMs: number;
  concurrency: number;
  payloadBytes: number;
}): Promise<CeilingResult> {
  const pool = new Pool(o.url, { connections: o.concurrency, pipelining: 1, keepAliveTimeout: 30_000 });
  const lat: number[] = [];
  let requests = 0;
  let ok = 0;
  let errors = 0;
  const t0 = performance.now();
  const deadline = t0 + o.durationMs;
  const worker = async (w: number) => {
    while (performance.now() < deadline) {
      const s = performance.now();
      const before = errors;
      requests++;
      try {
        const res = await pool.request({
          method: 'POST',
          path: `/ceiling/${w % 8}`,
          headers: { 'content-type': 'application/json' },
          body: eventData(requests, o.payloadBytes),
        });
        await res.body.text();
        if (res.statusCode < 400) ok++;
        else errors++;
      } catch {
        errors++;
      }
      lat.push(performance.now() - s);
      // Backs off after a failed request, outside its measured latency.
      if (errors > before) await sleep(20);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, w) => worker(w)));
  const seconds = (performance.now() - t0) / 1000;
  await pool.close();
  return {
    url: o.url,
    concurrency: o.concurrency,
    seconds: Math.round(seconds * 10) / 10,
    requests,
    ok,
    errors,
    ratePerSec: Math.round(ok / seconds),
    latencyMs: summarize(lat),
  };
}

// Standalone use.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values: a } = parseArgs({
    options: {
      url: { type: 'string', default: 'http://127.0.0.1:3333' },
      key: { type: 'string', default: process.env.API_KEY ?? '' },
      tenants: { type: 'string', default: 'acme' },
      topic: { type: 'string', default: 'user.created' },
      via: { type: 'string', default: 'http' },
      rate: { type: 'string' },
      concurrency: { type: 'string', default: '32' },
      batch: { type: 'string', default: '100' },
      duration: { type: 'string', default: '10' },
      payload: { type: 'string', default: '256' },
      brokers: { type: 'string', default: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092' },
      prefix: { type: 'string', default: process.env.KAFKA_TOPIC_PREFIX ?? 'switchyard.' },
      ceiling: { type: 'string' },
    },
  });
  const durationMs = Number(a.duration) * 1000;
  if (a.ceiling) {
    console.log(
      JSON.stringify(
        await runCeiling({ url: a.ceiling, durationMs, concurrency: Number(a.concurrency), payloadBytes: Number(a.payload) }),
        null,
        2,
      ),
    );
  } else {
    const tenants = (a.tenants as string).split(',');
    const h = startLoad({
      via: a.via as Via,
      gatewayUrl: a.url as string,
      apiKey: a.key as string,
      kafka: { brokers: (a.brokers as string).split(','), topicPrefix: a.prefix as string, partitions: 12 },
      pick: (n) => ({ tenant_id: tenants[n % tenants.length] as string, topic: a.topic as string }),
      ...(a.rate ? { ratePerSec: Number(a.rate) } : {}),
      concurrency: Number(a.concurrency),
      batchSize: Number(a.batch),
      durationMs,
      payloadBytes: Number(a.payload),
    });
    const tick = setInterval(() => console.log(JSON.stringify(h.stats)), 1000);
    const r = await h.done;
    clearInterval(tick);
    const secs = (r.endedAt - r.startedAt) / 1000;
    console.log(
      JSON.stringify(
        {
          via: r.via,
          seconds: secs,
          eventsAccepted: r.eventsAccepted,
          acceptedPerSec: Math.round(r.eventsAccepted / secs),
          rejected: r.rejected,
          firstErrors: r.firstErrors,
          publishLatencyMs: summarize(r.latency.value.view()),
        },
        null,
        2,
      ),
    );
  }
}
