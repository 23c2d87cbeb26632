// Form values of a type schema's fields, and the request bodies made of them.
import { ApiError, type FieldDescriptor, type TypeSchema } from './api.ts';
import { fieldProblem, fromRows, type KeyValue, mapPatch, rowsProblem, toRows } from './components.tsx';

export type Values = Record<string, unknown>;

/**
 * Credential fields a tenant token may not set: the webhook secrets (the API refuses them; the
 * secret is generated, and rotated with the rotate action). The type schema serves them for display.
 */
export const TENANT_READONLY_CREDENTIALS: Record<string, string[]> = {
  webhook: ['secret', 'previous_secret', 'previous_secret_invalid_at'],
};

export const editableCredentials = (schema: TypeSchema): FieldDescriptor[] =>
  schema.credential_fields.filter((f) => !(TENANT_READONLY_CREDENTIALS[schema.type] ?? []).includes(f.key));

/**
 * A checkbox's state: the stored value (a boolean, or "true"/"false" as some types store it), else
 * the field's default, which is what the sender uses when none is stored.
 */
const checked = (f: FieldDescriptor, v: unknown): boolean =>
  v === true || v === 'true' ? true : v === false || v === 'false' ? false : f.default === 'true';

/** Form values from stored values (key-value maps become editable rows). */
export function toValues(fields: FieldDescriptor[], stored: Record<string, unknown> | undefined): Values {
  const out: Values = {};
  for (const f of fields) {
    const v = stored?.[f.key];
    out[f.key] =
      f.type === 'key_value_map' ? toRows(v as Record<string, unknown> | undefined) : f.type === 'checkbox' ? checked(f, v) : (v ?? '');
  }
  return out;
}

/** Problems by field key, checked as the API checks them. */
export function problemsOf(fields: FieldDescriptor[], values: Values): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fields) {
    const p = f.type === 'key_value_map' ? rowsProblem(values[f.key] as KeyValue[] | undefined) : fieldProblem(f, values[f.key]);
    if (p) out[f.key] = p;
  }
  return out;
}

/** A create body's object: empty values left out, maps as objects, a checkbox with a default always sent. */
export function createObject(fields: FieldDescriptor[], values: Values): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.key];
    if (f.type === 'key_value_map') {
      const m = fromRows((v as KeyValue[]) ?? []);
      if (Object.keys(m).length) out[f.key] = m;
    } else if (f.type === 'checkbox') {
      if (v === true || f.default !== undefined) out[f.key] = v === true;
    } else if (v !== '' && v !== undefined && v !== null) out[f.key] = v;
  }
  return out;
}

/** A JSON Merge Patch from stored to edited values: changed values, cleared ones as null. */
export function patchObject(fields: FieldDescriptor[], stored: Record<string, unknown>, values: Values): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const before = stored[f.key];
    const v = values[f.key];
    if (f.type === 'key_value_map') {
      const after = fromRows((v as KeyValue[]) ?? []);
      const patch = mapPatch(before as Record<string, unknown> | undefined, after);
      const changed = Object.entries(patch).some(([k, x]) => (before as Record<string, unknown> | undefined)?.[k] !== x);
      if (changed) out[f.key] = Object.keys(after).length ? patch : null;
    } else if (f.type === 'checkbox') {
      if (Boolean(v) !== checked(f, before)) out[f.key] = Boolean(v);
    } else if ((v ?? '') !== (before ?? '')) out[f.key] = v === '' ? null : v;
  }
  return out;
}

/**
 * The API's problems at the form's fields, by the form's keys: `at` maps a body member to the prefix
 * of its fields' keys (`{ config: '' }`: `body.config.url` is `url`; `{ credentials: 'credentials.' }`).
 * Deeper paths keep the rest in the message (`custom_headers`: "Content-Type is a reserved header").
 */
export function fieldProblems(error: unknown, at: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  if (!(error instanceof ApiError)) return out;
  for (const p of error.problems) {
    const [member, field, ...rest] = p.path.replace(/^body\./, '').split('.');
    if (member === undefined || field === undefined || !(member in at)) continue;
    const key = `${at[member]}${field}`;
    out[key] ??= rest.length ? `${rest.join('.')} ${p.message}` : p.message;
  }
  return out;
}

/** The problems without one field's (once the field is edited again). */
export function without(problems: Record<string, string>, key: string): Record<string, string> {
  const { [key]: _, ...rest } = problems;
  return rest;
}
