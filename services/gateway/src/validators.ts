/**
 * Request validation, one ajv per kind of input. Path parameters and query strings arrive as text,
 * so their ajv coerces them to the schema's types ("5" to 5, one value to a list). A body is JSON,
 * which has types of its own: its ajv takes it as sent, so `true` is never a 1 s delay nor "60" a
 * number, and its errors carry the value sent (verbose) for errors.ts to name it. Both know the
 * shared models (openapi.ts registerModels) and the instants a Date and Postgres hold.
 */
import type { FastifyInstance } from 'fastify';
import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import { DATE_TIME_FORMAT } from '@switchyard/shared/time.ts';

// Every problem at once; unknown fields refused (never dropped). Union types are intended.
const OPTIONS: Options = { allErrors: true, removeAdditional: false, useDefaults: true, allowUnionTypes: true, addUsedSchema: false };

function withFormats(ajv: Ajv): Ajv {
  addFormats.default(ajv);
  // `date-time` is an instant a Date and Postgres hold (DATE_TIME_FORMAT), not RFC 3339's wider set.
  ajv.addFormat('date-time', DATE_TIME_FORMAT);
  return ajv;
}

/** An ajv for JSON as sent: request bodies, and each event of a batch publish (routes/publish.ts). */
export const jsonAjv = (): Ajv => withFormats(new Ajv({ ...OPTIONS, coerceTypes: false, verbose: true }));

/** Bodies validated as sent, everything else (params, querystring, headers) coerced from text. */
export function registerValidators(app: FastifyInstance): void {
  const asSent = jsonAjv();
  const fromText = withFormats(new Ajv({ ...OPTIONS, coerceTypes: 'array' }));
  const known = new Set<string>();
  app.setValidatorCompiler(({ schema, httpPart }) => {
    // Routes compile once their plugin has loaded, after the models were added at the root.
    for (const [id, model] of Object.entries(app.getSchemas() as Record<string, object>)) {
      if (known.has(id)) continue;
      asSent.addSchema(model);
      fromText.addSchema(model);
      known.add(id);
    }
    return (httpPart === 'body' ? asSent : fromText).compile(schema);
  });
}
