// Checks HTTP answers against the served OpenAPI document: the e2e suites pass every response they
// see through it, so the document is exact for what the server really answers.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

type Response = { content?: Record<string, unknown>; $ref?: string };
export type Doc = {
  paths: Record<string, Record<string, { responses?: Record<string, Response>; 'x-aliases'?: string[] }>>;
  components?: { responses?: Record<string, Response> };
};

export interface OpenApiChecker {
  /** What is wrong with this answer to `method url` (empty when it matches the document). */
  check(method: string, url: string, status: number, body: unknown): string[];
  /** Every problem seen so far, one line each. */
  readonly problems: string[];
  /** Answers checked so far. */
  readonly checked: number;
}

export function openApiChecker(doc: Doc): OpenApiChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats.default(ajv);
  ajv.addSchema(doc as object, 'openapi.json');
  // Templates with fewer parameters first: a fixed segment wins over a parameter, as in the router.
  // An operation's aliases (the other path forms it is served at, `x-aliases`) lead to it too.
  const template = (path: string, method: string | null, canonical: string) => ({
    path: canonical,
    method,
    params: (path.match(/\{/g) ?? []).length,
    re: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
  });
  const templates = Object.entries(doc.paths)
    .flatMap(([path, ops]) => [
      template(path, null, path),
      ...Object.entries(ops).flatMap(([m, op]) => (op['x-aliases'] ?? []).map((alias) => template(alias, m, path))),
    ])
    .sort((a, b) => a.params - b.params);
  const compiled = new Map<string, ValidateFunction>();
  const problems: string[] = [];
  let checked = 0;
  const pointer = (...parts: string[]) => parts.map((p) => encodeURIComponent(p.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');

  return {
    problems,
    get checked() {
      return checked;
    },
    check(method, url, status, body) {
      checked++;
      const path = decodeURIComponent(new URL(url, 'http://x').pathname);
      const m = method.toLowerCase();
      const found = templates.find((t) => t.re.test(path) && (t.method === null || t.method === m) && doc.paths[t.path]?.[m]);
      const where = `${method} ${path} -> ${status}`;
      const out: string[] = [];
      // No route at all: the one 404 NOT_FOUND every unknown path answers.
      if (!found) {
        if (status !== 404 || (body as { code?: string } | undefined)?.code !== 'NOT_FOUND')
          out.push(`${where}: no operation in the document`);
      } else {
        const responses = doc.paths[found.path]?.[m]?.responses ?? {};
        const key =
          String(status) in responses ? String(status) : `${String(status)[0]}XX` in responses ? `${String(status)[0]}XX` : 'default';
        if (!(key in responses)) out.push(`${where}: status not documented for ${m.toUpperCase()} ${found.path}`);
        else {
          // A named response (#/components/responses/NotFound) is looked up there.
          const named = responses[key]?.$ref?.replace('#/components/responses/', '');
          const response = named ? doc.components?.responses?.[named] : responses[key];
          const at = named ? ['components', 'responses', named] : ['paths', found.path, m, 'responses', key];
          if (!response?.content?.['application/json']) {
            if (body !== undefined) out.push(`${where}: a body where the document has none`);
          } else {
            const id = at.join(' ');
            let validate = compiled.get(id);
            if (!validate) {
              validate = ajv.compile({ $ref: `openapi.json#/${pointer(...at, 'content', 'application/json', 'schema')}` });
              compiled.set(id, validate);
            }
            if (!validate(body))
              out.push(`${where}: ${ajv.errorsText(validate.errors, { dataVar: 'body' })} (${JSON.stringify(body).slice(0, 300)})`);
          }
        }
      }
      problems.push(...out);
      return out;
    },
  };
}
