import { maskFields } from '@switchyard/shared/destinations/fields.ts';
import { REGISTRY, TYPE_NAMED } from '@switchyard/shared/destinations/registry.ts';
import type { Destination } from '@switchyard/shared/model/index.ts';

/** The API form of a destination: sensitive credentials masked (the webhook secret stays readable). */
/** A webhook's previous secret stops signing at previous_secret_invalid_at and then leaves the view too. */
function liveCredentials(d: Destination, now: number): Record<string, unknown> {
  const c = d.credentials;
  if (d.type !== 'webhook' || !c.previous_secret_invalid_at) return c;
  if (Date.parse(String(c.previous_secret_invalid_at)) > now) return c;
  const { previous_secret: _p, previous_secret_invalid_at: _at, ...rest } = c;
  return rest;
}

export function destinationView(d: Destination, now: number = Date.now()) {
  const def = REGISTRY[d.type];
  const view: Record<string, unknown> = {
    id: d.id,
    tenant_id: d.tenant_id,
    type: d.type,
    topics: d.topics,
    config: d.config,
    credentials: maskFields(def.credential_fields, liveCredentials(d, now)),
    disabled_at: d.disabled_at,
    created_at: d.created_at,
    updated_at: d.updated_at,
    target: def.target(d.config),
  };
  const targetUrl = def.targetUrl?.(d.config);
  if (targetUrl) view.target_url = targetUrl;
  if (d.filter) view.filter = d.filter;
  if (d.delivery_metadata) view.delivery_metadata = d.delivery_metadata;
  if (d.metadata) view.metadata = d.metadata;
  if (d.rate_limit) view.rate_limit = d.rate_limit;
  if (d.ordered) view.ordered = true;
  TYPE_NAMED.add(view);
  return view;
}
