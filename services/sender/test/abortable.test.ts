import { getEventListeners } from 'node:events';
import t from 'tap';
import { untilAborted } from '../src/abortable.ts';

t.test('the work answers first: its value, and no listener left on the signal', async (t) => {
  const { signal } = new AbortController();
  const listeners = () => getEventListeners(signal, 'abort').length;
  t.equal(await untilAborted(Promise.resolve(42), signal), 42);
  t.equal(listeners(), 0, 'the abort listener is removed');
  await t.rejects(untilAborted(Promise.reject(new Error('refused')), signal), /refused/, "the work's failure is the answer");
  t.equal(listeners(), 0);
});

t.test('the signal aborts first: its reason at once, the work left to finish unheard', async (t) => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => process.off('unhandledRejection', onUnhandled));

  const controller = new AbortController();
  let fail: (e: Error) => void = () => {};
  const work = new Promise<number>((_, reject) => {
    fail = reject;
  });
  const answer = untilAborted(work, controller.signal);
  controller.abort(new Error('deadline'));
  await t.rejects(answer, /deadline/, 'the reason the signal gives');
  fail(new Error('late failure'));
  await new Promise((r) => setImmediate(r));
  t.same(unhandled, [], "the work's later failure is not an unhandled rejection");

  const already = AbortSignal.abort(new Error('before'));
  await t.rejects(untilAborted(new Promise(() => {}), already), /before/, 'a signal aborted before the call answers at once');
});
