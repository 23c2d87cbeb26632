// The pipeline the ordered-delivery e2e suites drive (ordered.test.ts, ordered-spill.test.ts): every
// service on the real broker and Postgres, or one embedded process (SWITCHYARD_E2E_MODE=embedded); a
// receiver; a tenant with an ordered webhook destination at /ordered and an unordered one at /free;
// events carrying their number `n`, published one at a time so that the events topic holds them in
// that order.
import { type Receiver, startReceiver, startService, startStack, type Teardown } from '@switchyard/shared/testing/index.ts';

export interface Order {
  ordered: boolean;
  blocked: { event_id: string; attempt_number: number; waiting: number } | null;
  waiting: number;
}

export async function orderedPipeline(t: Teardown, tenant: string, settings: Record<string, string>) {
  const stack = await startStack(t, {
    TOPICS: 'user.created',
    SENDER_TYPES: 'webhook',
    ...settings,
  });
  const { env, api } = stack;
  let sender = stack.sender;
  const rx: Receiver = await startReceiver(t);

  await api('PUT', `/api/v1/tenants/${tenant}`);
  const create = async (path: string, extra: Record<string, unknown>) => {
    const r = await api<{ id: string; ordered?: boolean }>('POST', `/api/v1/tenants/${tenant}/destinations`, {
      type: 'webhook',
      topics: '*',
      config: { url: `${rx.url}${path}` },
      ...extra,
    });
    if (r.status !== 201) throw new Error(`create destination answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const ordered = await create('/ordered', { ordered: true });
  await create('/free', {});

  const ids = new Map<number, string>();
  const nOf = (r: { body: string }) => (JSON.parse(r.body) as { n: number }).n;
  const arrivals = (path: string) => rx.requests.filter((r) => r.url === path).map(nOf);
  const orderUrl = `/api/v1/tenants/${tenant}/destinations/${ordered.id}/order`;
  return {
    api,
    rx,
    ordered,
    ids,
    nOf,
    arrivals,
    /** The distinct events that reached `path`. */
    distinct: (path: string) => new Set(arrivals(path)).size,
    /** The ordered destination's order endpoint. */
    order: async () => (await api<Order>('GET', orderUrl)).body,
    /** Events `from` .. `to` - 1, each accepted before the next. */
    async publish(from: number, to: number) {
      for (let n = from; n < to; n++) {
        const r = await api<{ id: string }>('POST', '/api/v1/publish', { tenant_id: tenant, topic: 'user.created', data: { n } });
        if (r.status !== 202) throw new Error(`publish answered ${r.status}`);
        ids.set(n, r.body.id);
      }
    },
    /** kill -9 of the sender, started again (embedded mode: the one process). */
    async killSender() {
      await sender.stop('SIGKILL');
      sender = await startService(t, 'sender', env);
    },
  };
}
