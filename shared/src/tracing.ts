// OpenTelemetry traces, off by default (OTEL_EXPORTER_OTLP_ENDPOINT empty). Loaded by runtime.ts only
// when on, so a process without tracing never loads the SDK; services hold `Tracing | null` and test
// it before doing anything, so the hot path pays one branch when off: no span object, no header.
//
// One trace per event: the gateway's publish span is its root; the router, each sender delivery and
// the attempts service's storage of each attempt are child spans, their parent read from the W3C
// `traceparent` header of the record they consume (both buses carry record headers: Kafka's own,
// the embedded log's JSON headers field). No global provider or context manager is registered: a
// span's parent is always passed explicitly, so libraries using @opentelemetry/api on their own
// (the Pub/Sub client) are left alone.
import { defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

export type Attributes = Record<string, string | number | boolean | undefined>;

/** A span of our own, with what a record needs to carry it on. */
export interface TraceSpan {
  /** Headers to write on the records this span produces: `traceparent` (and `tracestate`). */
  headers(): Record<string, string>;
  set(attributes: Attributes): void;
  /** Marks the span failed (status ERROR) without ending it: an outcome that is a failure, not a throw. */
  fail(message: string): void;
  /** Ends the span; with an error, marked failed. */
  end(error?: unknown): void;
}

export interface Tracing {
  /**
   * Starts a span, a child of the span in `parent` (a consumed record's headers) when it carries a
   * valid traceparent, else a new trace. `kind` follows messaging conventions: producer for publish,
   * consumer for the services reading a topic.
   */
  span(
    name: string,
    kind: 'producer' | 'consumer' | 'internal',
    parent: Record<string, string> | undefined,
    attributes?: Attributes,
  ): TraceSpan;
  /** Exports what is buffered and stops. */
  close(): Promise<void>;
}

export interface TracingOptions {
  /** Base URL of an OTLP/HTTP collector; spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
  serviceName: string;
}

const KINDS = { producer: SpanKind.PRODUCER, consumer: SpanKind.CONSUMER, internal: SpanKind.INTERNAL } as const;

export function createTracing(opts: TracingOptions): Tracing {
  const exporter = new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.serviceName }),
    // Exported in the background in batches; closing the runtime flushes the rest.
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
  });
  const tracer = provider.getTracer('switchyard');
  const propagator = new W3CTraceContextPropagator();

  const wrap = (span: Span): TraceSpan => ({
    headers() {
      const carrier: Record<string, string> = {};
      propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
      return carrier;
    },
    set(attributes) {
      for (const [k, v] of Object.entries(attributes)) if (v !== undefined) span.setAttribute(k, v);
    },
    fail(message) {
      span.setStatus({ code: SpanStatusCode.ERROR, message });
    },
    end(error) {
      if (error !== undefined) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      }
      span.end();
    },
  });

  return {
    span(name, kind, parent, attributes = {}) {
      const ctx = parent ? propagator.extract(ROOT_CONTEXT, parent, defaultTextMapGetter) : ROOT_CONTEXT;
      const clean: Record<string, string | number | boolean> = {};
      for (const [k, v] of Object.entries(attributes)) if (v !== undefined) clean[k] = v;
      return wrap(tracer.startSpan(name, { kind: KINDS[kind], attributes: clean }, ctx));
    },
    async close() {
      await provider.shutdown();
    },
  };
}
