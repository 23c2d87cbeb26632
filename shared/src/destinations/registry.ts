import { DESTINATION_TYPES, type DestinationType } from '../model/index.ts';
import { DELIVERY_CONTROLS } from './controls.ts';
import type { DestinationTypeDef } from './types/def.ts';
import { gateway } from './types/gateway.ts';
import { kafka } from './types/kafka.ts';
import { kinesis } from './types/kinesis.ts';
import { pubsub } from './types/pubsub.ts';
import { rabbitmq } from './types/rabbitmq.ts';
import { s3 } from './types/s3.ts';
import { servicebus } from './types/servicebus.ts';
import { sqs } from './types/sqs.ts';
import { webhook } from './types/webhook.ts';

export type { DestinationTypeDef };

/**
 * The destination type registry: one declaration per type, each in its own file under types/ (as
 * each type's sender is in its own folder, services/sender/src/<type>/), in the order interface.md
 * lists them, then kafka.
 */
export const REGISTRY: Readonly<Record<DestinationType, DestinationTypeDef>> = {
  webhook,
  sqs,
  rabbitmq,
  gateway,
  kinesis,
  servicebus,
  s3,
  pubsub,
  kafka,
};

export function isDestinationType(t: unknown): t is DestinationType {
  return typeof t === 'string' && (DESTINATION_TYPES as readonly string[]).includes(t);
}

/**
 * Type names of the service this contract follows, accepted as input (create, patch, the `type`
 * filter, /destination-types/{type}) so existing configuration can be pasted. Responses carry
 * interface.md's names, or these with API_TYPE_NAMES=outpost (services/gateway/src/type-names.ts).
 */
export const TYPE_ALIASES: Readonly<Record<string, DestinationType>> = {
  aws_sqs: 'sqs',
  aws_kinesis: 'kinesis',
  aws_s3: 's3',
  azure_servicebus: 'servicebus',
  gcp_pubsub: 'pubsub',
  hookdeck: 'gateway',
};

/** The other service's name of each type (the aliases, reversed); a type it has no other name for keeps its own. */
export const OUTPOST_TYPE_NAMES: Readonly<Record<DestinationType, string>> = Object.fromEntries(
  DESTINATION_TYPES.map((t) => [t, Object.keys(TYPE_ALIASES).find((alias) => TYPE_ALIASES[alias] === t) ?? t]),
) as Record<DestinationType, string>;

/**
 * The answers that carry a destination type in `type`: destination views and type schemas, marked
 * where they are made, so that the gateway renames exactly those (never a `type` in event data).
 */
export const TYPE_NAMED = new WeakSet<object>();

/** Every type name accepted as input: interface.md's names, then the aliases. */
export const INPUT_TYPE_NAMES: readonly string[] = [...DESTINATION_TYPES, ...Object.keys(TYPE_ALIASES)];

/** interface.md's name of a type named by its own name or an alias; undefined for no type. */
export function canonicalType(t: unknown): DestinationType | undefined {
  if (isDestinationType(t)) return t;
  return typeof t === 'string' && Object.hasOwn(TYPE_ALIASES, t) ? TYPE_ALIASES[t] : undefined;
}

/** The public schema of a type, as served by GET /destination-types. */
export function typeSchema(def: DestinationTypeDef) {
  // interface.md names the regular expression `validation`; contract-details.md calls it `pattern`. Both are served.
  const publicField = ({ writeOnly: _w, adminOnly: _a, format: _f, ...f }: DestinationTypeDef['config_fields'][number]) =>
    f.pattern ? { ...f, validation: f.pattern } : f;
  const schema = {
    type: def.type as string,
    label: def.label,
    description: def.description,
    icon: def.icon,
    instructions: def.instructions,
    ...(def.remote_setup_url ? { remote_setup_url: def.remote_setup_url } : {}),
    config_fields: def.config_fields.map(publicField),
    credential_fields: def.credential_fields.filter((f) => !f.writeOnly).map(publicField),
    controls: DELIVERY_CONTROLS,
  };
  TYPE_NAMED.add(schema);
  return schema;
}
