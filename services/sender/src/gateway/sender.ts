/**
 * gateway delivery (../shared/spec/contract-details.md, "How each type delivers"): POST the event data
 * to `<EVENT_GATEWAY_BASE_URL>/<source id>`, the metadata as headers prefixed like webhooks', signed
 * with `X-Hookdeck-Signature: v0=<base64 HMAC-SHA256(signing key, body)>`. The token is base64 of
 * `source_id:signing_key`. Through the egress-checked agent, as webhooks; the answer is recorded as a
 * webhook's (code = HTTP status, success below 400).
 */
import { createHmac } from 'node:crypto';
import { parseGatewayToken } from '@switchyard/shared/destinations/types/gateway.ts';
import { isHeaderName, isHeaderValue, RESERVED_HEADERS } from '@switchyard/shared/destinations/webhook-headers.ts';
import type { Dispatcher } from 'undici';
import { metadataOf } from '../metadata.ts';
import { failed, type TypeSender } from '../sender.ts';
import { USER_AGENT } from '../webhook/request.ts';
import { postOutcome } from '../webhook/sender.ts';

export const SIGNATURE_HEADER = 'x-hookdeck-signature';

export const signGateway = (signingKey: string, body: string) =>
  `v0=${createHmac('sha256', signingKey).update(body, 'utf8').digest('base64')}`;

export interface GatewaySenderOptions {
  dispatcher: Dispatcher;
  baseUrl: string;
  headerPrefix: string;
  responseMaxBytes: number;
}

export function createGatewaySender(opts: GatewaySenderOptions): TypeSender {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const prefix = opts.headerPrefix.toLowerCase();
  return {
    open(target) {
      const token = parseGatewayToken(target.credentials.token);
      const url = typeof token === 'string' ? '' : `${base}/${encodeURIComponent(token.sourceId)}`;
      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (typeof token === 'string') return failed('invalid_config', token);
          const body = JSON.stringify(event.data) ?? 'null';
          const headers: Record<string, string> = {};
          for (const [key, value] of Object.entries(metadataOf(event, deliveryMetadata))) {
            const name = `${prefix}${key}`.toLowerCase();
            if (isHeaderName(name) && isHeaderValue(value) && !RESERVED_HEADERS.has(name) && name !== SIGNATURE_HEADER)
              headers[name] = value;
          }
          headers['content-type'] = 'application/json';
          headers['user-agent'] = USER_AGENT;
          headers[SIGNATURE_HEADER] = signGateway(token.signingKey, body);
          return postOutcome(opts.dispatcher, url, { headers, body, signal, maxBytes: opts.responseMaxBytes }, new Date());
        },
        async close() {},
      };
    },
    async close() {},
  };
}
