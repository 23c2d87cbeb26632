// The shutdown grace (shared/src/process.ts): 30 s, or longer when one piece of in-flight work may
// take longer (the sender's DELIVERY_TIMEOUT_SECONDS, the gateway's PUBLISH_TIMEOUT_MS), so a stop
// waits for it rather than exiting in its middle. test/deploy/k8s.test.ts checks the pods'
// terminationGracePeriodSeconds against it.
import t from 'tap';
import { SHUTDOWN_GRACE_MS, shutdownGraceMs } from '../src/process.ts';
import { SETTINGS } from '../src/config/index.ts';

t.test('the grace outlasts the longest in-flight work by 10 s, never below 30 s', async (t) => {
  t.equal(SHUTDOWN_GRACE_MS, 30_000);
  t.equal(shutdownGraceMs(0), 30_000);
  t.equal(shutdownGraceMs(Number(SETTINGS.DELIVERY_TIMEOUT_SECONDS.default) * 1000), 30_000, 'the default delivery timeout: 30 s');
  t.equal(shutdownGraceMs(Number(SETTINGS.PUBLISH_TIMEOUT_MS.default)), 30_000, 'the default publish timeout: 30 s');
  t.equal(shutdownGraceMs(35_000), 45_000, 'DELIVERY_TIMEOUT_SECONDS=35');
  t.equal(shutdownGraceMs(SETTINGS.DELIVERY_TIMEOUT_SECONDS.maximum * 1000), 310_000, 'the longest delivery timeout');
  t.equal(shutdownGraceMs(SETTINGS.PUBLISH_TIMEOUT_MS.maximum), 130_000, 'the longest publish timeout');
});
