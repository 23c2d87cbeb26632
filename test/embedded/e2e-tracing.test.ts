// The tracing suite (test/e2e/tracing.test.ts) against embedded mode: the traceparent rides the
// embedded log's record headers, and the one process exports every span as switchyard-embedded.
process.env.SWITCHYARD_E2E_MODE = 'embedded';
await import('../e2e/tracing.test.ts');
