/**
 * @switchyard/client: a typed client of the Switchyard API. The types are generated from the
 * gateway's OpenAPI document by openapi-typescript (src/generated, checked in and tested against the
 * served document); the calls go through openapi-fetch, which types every path, parameter, body
 * and answer from them and adds nothing else at run time. Hand-written beside it: `verifyWebhook`
 * (both signature modes, secret rotation) and cursor paging (`items`, `pages`).
 *
 *   const api = createSwitchyardClient({ baseUrl: 'http://localhost:3333', token: process.env.API_KEY });
 *   await ok(api.PUT('/api/v1/tenants/{tenant_id}', { params: { path: { tenant_id: 'acme' } } }));
 */
export * from './client.ts';
export { type SignatureMode, type VerifyWebhookOptions, verifyWebhook, WebhookVerificationError } from './webhook.ts';
