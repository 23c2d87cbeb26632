// Regenerates the client's types from the OpenAPI document the gateway serves:
//   npm run generate -w packages/client          writes src/generated/openapi.json and src/generated/schema.ts
//   npm run generate -w packages/client -- --check   exits 1 when either file differs from what would be written
// The gateway builds the document without a server (services/gateway/src/openapi-document.ts), so
// the files follow the code; packages/client/test/generated.test.ts fails when they do not.
import { readFileSync, writeFileSync } from 'node:fs';
import { openapiDocument } from '@switchyard/gateway/src/openapi-document.ts';
import { generatedFiles } from '../src/generate.ts';

const check = process.argv.includes('--check');
const files = await generatedFiles(await openapiDocument());
let stale = 0;
for (const [url, text] of files) {
  const current = (() => {
    try {
      return readFileSync(url, 'utf8');
    } catch {
      return undefined;
    }
  })();
  if (current === text) continue;
  if (check) {
    console.error(`${url.pathname} is out of date: run npm run generate -w packages/client`);
    stale++;
  } else {
    writeFileSync(url, text);
    console.log(`wrote ${url.pathname}`);
  }
}
process.exit(stale ? 1 : 0);
