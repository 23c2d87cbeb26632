import { readFileSync } from 'node:fs';
import t from 'tap';
import { AppError, ERRORS, errorBody } from '../src/errors.ts';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

t.test('every error code is documented in docs/errors.md with its status', async (t) => {
  for (const [code, def] of Object.entries(ERRORS)) {
    t.match(doc, new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${def.status}\\s*\\|`), `${code} (${def.status}) is documented`);
  }
});

t.test('docs/errors.md lists no code the catalogue lacks', async (t) => {
  const documented = [...doc.matchAll(/^\|\s*`([A-Z_]+)`\s*\|/gm)].map((m) => m[1]);
  t.same(
    documented.filter((c) => !((c as string) in ERRORS)),
    [],
  );
});

t.test('errors carry code, status and retryable; the body has one shape', async (t) => {
  const e = AppError.validation([{ path: 'body.topic', message: 'is required' }]);
  t.equal(e.code, 'VALIDATION_FAILED');
  t.equal(e.status, 422);
  t.equal(e.retryable, false);
  t.same(errorBody(e), {
    status: 422,
    code: 'VALIDATION_FAILED',
    message: 'The request is invalid.',
    data: ['body.topic is required'],
    problems: [{ path: 'body.topic', message: 'is required' }],
  });
  t.same(errorBody(new AppError('TENANT_NOT_FOUND')), { status: 404, code: 'TENANT_NOT_FOUND', message: 'Tenant not found.' });
});
