import type { Setting } from './setting.ts';

/** Settings of the router (services/router): how it fetches published events. */
export const ROUTER_SETTINGS = {
  ROUTER_BATCH_WAIT_MS: {
    kind: 'integer',
    default: '10',
    minimum: 0,
    maximum: 1000,
    description:
      'Longest the router lets a fetch of published events fill before routing it (its fetch wait): at low and middling load fewer, larger batches, so fewer database round trips and produce requests downstream, for up to this much more publish-to-delivery latency; publishers never wait for it. On Kafka, not waited when the router spent as long handling the last fetch (at full speed); the embedded log always waits for a fetch that does not fill. 0: route what each fetch brings.',
  },
  ROUTER_FETCH_MAX_BYTES: {
    kind: 'integer',
    default: '2097152',
    minimum: 65536,
    maximum: 104857600,
    description:
      'Bytes one fetch of published events may bring back to a router, all of it from one partition if only one has events (kafkajs would take 10 MiB a fetch, 1 MiB a partition). Behind, a router holds one fetch of events and every delivery record they expand to at once.',
  },
} as const satisfies Record<string, Setting>;
