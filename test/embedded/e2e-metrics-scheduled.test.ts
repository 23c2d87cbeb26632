// The scheduled deliveries' metrics suite (test/e2e/metrics-scheduled.test.ts) against embedded mode:
// one process, the embedded log and database, as `npm start` runs it.
process.env.SWITCHYARD_E2E_MODE = 'embedded';
await import('../e2e/metrics-scheduled.test.ts');
