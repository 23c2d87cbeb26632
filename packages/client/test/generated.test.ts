// The checked-in generated files are exactly what openapi-typescript makes of the document the
// gateway serves now: a route or model change without `npm run generate -w packages/client` fails here.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { openapiDocument } from '@switchyard/gateway/src/openapi-document.ts';
import { generatedFiles } from '../src/generate.ts';

t.test('src/generated matches the served document', async (t) => {
  const files = await generatedFiles(await openapiDocument());
  t.equal(files.size, 2);
  for (const [url, text] of files) {
    const name = url.pathname.split('/').slice(-2).join('/');
    t.ok(readFileSync(url, 'utf8') === text, `${name} is up to date (npm run generate -w packages/client)`);
  }
});
