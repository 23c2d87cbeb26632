import { maskFields } from '@switchyard/shared/destinations/fields.ts';
import { REGISTRY } from '@switchyard/shared/destinations/registry.ts';
import type { Destination } from '@switchyard/shared/model/index.ts';

/** The API form of a destination: sensitive credentials masked (the webhook secret stays readable). */
export function destinationView(d: Destination) {
  const def = REGISTRY[d.type];
  const view: Record<string, unknown> = {
    id: d.id,
    tenant_id: d.tenant_id,
    type: d.type,
    topics: d.topics,
    config: d.config,
    credentials: maskFields(def.credential_fields, d.credentials),
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
  return view;
}
