// The metrics suite (test/e2e/metrics.test.ts) against embedded mode: one process serves every series
// once, through the gateway.
process.env.SWITCHYARD_E2E_MODE = 'embedded';
await import('../e2e/metrics.test.ts');
