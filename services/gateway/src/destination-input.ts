import { AppError, type Problem } from '@switchyard/shared/errors.ts';
import { mask, validateFields } from '@switchyard/shared/destinations/fields.ts';
import { REGISTRY } from '@switchyard/shared/destinations/registry.ts';
import { generateWebhookSecret } from '@switchyard/shared/destinations/types/webhook.ts';
import { mergePatch, setOwn } from './merge-patch.ts';
import type { Destination, DestinationType } from '@switchyard/shared/model/index.ts';
import { isConfiguredTopic, validateFilter } from '@switchyard/shared/routing/match.ts';
import { isHeaderName, validateCustomHeaders } from '@switchyard/shared/destinations/webhook-headers.ts';
import type { ValidateRules } from '@switchyard/shared/destinations/types/def.ts';
import type { Principal } from './auth.ts';

export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;

/** Topics as stored: a list, `['*']` for all; each must be a configured topic unless TOPICS is `*`. */
export function normalizeTopics(topics: string | string[], allowed: readonly string[], problems: Problem[]): string[] {
  const list = typeof topics === 'string' ? [topics] : [...new Set(topics)];
  if (list.includes('*')) return ['*'];
  for (const t of list)
    if (!isConfiguredTopic(allowed, t)) problems.push({ path: 'body.topics', message: `"${t}" is not a configured topic` });
  return list;
}

/** Checks config, credentials and filter of a (new or patched) destination of `type`. */
export function checkDestination(
  type: DestinationType,
  d: { config: Record<string, unknown>; credentials: Record<string, unknown>; filter: Record<string, unknown> | null },
  problems: Problem[],
  headerPrefix: string,
  rules: ValidateRules = {},
): void {
  const def = REGISTRY[type];
  const fieldProblems = [
    ...validateFields(def.config_fields, d.config, 'body.config'),
    ...validateFields(def.credential_fields, d.credentials, 'body.credentials'),
  ];
  problems.push(...fieldProblems);
  // A value's inner shape (a service account key, a template) once its field itself is valid.
  if (def.validate) {
    const bad = new Set(fieldProblems.map((p) => p.path));
    problems.push(...def.validate(d.config, d.credentials, rules).filter((p) => !bad.has(p.path)));
  }
  // The filter's own paths start at it: in a request, it is a member of the body.
  if (d.filter) problems.push(...validateFilter(d.filter).map((p) => ({ ...p, path: `body.${p.path}` })));
  // A custom_headers its field check refused already (not an object of strings) is named once.
  if (type === 'webhook' && !fieldProblems.some((p) => p.path === 'body.config.custom_headers'))
    problems.push(...validateCustomHeaders(d.config.custom_headers, headerPrefix));
}

/**
 * delivery_metadata becomes request headers (and message attributes): names must be HTTP header
 * names and values free of control characters (CR/LF would inject headers), as for custom_headers.
 */
export function checkDeliveryMetadata(dm: Record<string, string | null> | null | undefined, problems: Problem[]): void {
  for (const [k, v] of Object.entries(dm ?? {})) {
    if (!isHeaderName(k)) problems.push({ path: `body.delivery_metadata.${k}`, message: 'is not a valid HTTP header name' });
    else if (typeof v === 'string' && !/^[\t\x20-\x7e\u0080-\uffff]*$/.test(v))
      problems.push({ path: `body.delivery_metadata.${k}`, message: 'must not contain control characters (no line breaks)' });
  }
}

/** Admin-only credential fields (the webhook secrets) may not be set with a tenant token. */
export function checkCredentialRights(
  type: DestinationType,
  input: Record<string, unknown> | null | undefined,
  principal: Principal,
  problems: Problem[],
) {
  if (principal.kind === 'admin' || !input) return;
  for (const f of REGISTRY[type].credential_fields) {
    if (f.adminOnly && input[f.key] !== undefined)
      problems.push({ path: `body.credentials.${f.key}`, message: 'may only be set with the admin API key' });
  }
}

/**
 * Write-only credential fields (webhook rotate_secret) as sent: they are acted on and dropped before
 * the credentials to store are checked, so a value no rule accepts would otherwise pass unnoticed.
 */
export function checkWriteOnly(type: DestinationType, input: Record<string, unknown> | null | undefined, problems: Problem[]): void {
  if (!input) return;
  const fields = REGISTRY[type].credential_fields.filter((f) => f.writeOnly && Object.hasOwn(input, f.key));
  const sent = Object.fromEntries(fields.map((f) => [f.key, input[f.key]]));
  problems.push(...validateFields(fields, sent, 'body.credentials'));
}

/** When a previous webhook secret given without an end stops signing: 24 hours on (interface.md). */
const previousSecretEnd = (now: Date) => new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS).toISOString();

/**
 * Webhook credentials on create: a secret is generated when none is given, and a previous secret
 * given without `previous_secret_invalid_at` signs for 24 hours, not for ever.
 */
export function initialCredentials(type: DestinationType, input: Record<string, unknown>, now: Date): Record<string, unknown> {
  const out = { ...input };
  if (type !== 'webhook') return out;
  delete out.rotate_secret;
  if (!out.secret) out.secret = generateWebhookSecret();
  if (out.previous_secret && !out.previous_secret_invalid_at) out.previous_secret_invalid_at = previousSecretEnd(now);
  return out;
}

/**
 * Credentials after a PATCH: merge-patched, with masked values sent back unchanged kept as they were
 * (so a form can round-trip what GET returned), and webhook rotation applied.
 */
export function patchedCredentials(existing: Destination, patch: Record<string, unknown> | null, now: Date): Record<string, unknown> {
  if (patch === null) patch = {};
  const def = REGISTRY[existing.type];
  const unmasked: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) {
    const f = def.credential_fields.find((x) => x.key === k);
    const current = Object.hasOwn(existing.credentials, k) ? existing.credentials[k] : undefined;
    setOwn(unmasked, k, f?.sensitive && current !== undefined && v === mask(current) ? current : v);
  }
  const rotate = unmasked.rotate_secret === true || unmasked.rotate_secret === 'true';
  delete unmasked.rotate_secret;
  const next = mergePatch(existing.credentials, unmasked) as Record<string, unknown>;
  if (existing.type === 'webhook') {
    if (rotate) {
      next.previous_secret = existing.credentials.secret;
      next.previous_secret_invalid_at = previousSecretEnd(now);
      next.secret = generateWebhookSecret();
    }
    if (!next.secret) next.secret = generateWebhookSecret();
    // A previous secret set now signs for 24 hours from now unless the patch says until when: the
    // end an earlier one had (often past) is not its.
    const newPrevious = typeof unmasked.previous_secret === 'string' && unmasked.previous_secret !== existing.credentials.previous_secret;
    if (next.previous_secret && (!next.previous_secret_invalid_at || (newPrevious && unmasked.previous_secret_invalid_at === undefined))) {
      next.previous_secret_invalid_at = previousSecretEnd(now);
    }
    if (!next.previous_secret) delete next.previous_secret_invalid_at;
  }
  return next;
}

export function fail(problems: Problem[]): void {
  if (problems.length) throw AppError.validation(problems);
}
