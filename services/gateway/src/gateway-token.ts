/**
 * Checks a gateway destination's token with the event gateway when EVENT_GATEWAY_VERIFY_URL is set:
 * GET the URL ({source_id} replaced by the token's source id) with `Authorization: Bearer <token>`.
 * A 2xx answer accepts the token; 401, 403 or 404 refuse it, a problem of the request (422); no
 * answer, or any other, is the gateway's fault: 503, nothing saved. Unset, tokens are not checked
 * (self-hosting, tests).
 */
import { parseGatewayToken } from '@switchyard/shared/destinations/types/gateway.ts';
import { AppError, type Problem } from '@switchyard/shared/errors.ts';

export const VERIFY_TIMEOUT_MS = 5000;

export async function verifyGatewayToken(verifyUrl: string, token: unknown, fetchImpl: typeof fetch = fetch): Promise<Problem | null> {
  // A token of another form is refused by the type's own check (types/gateway.ts), never sent.
  const parsed = parseGatewayToken(token);
  if (!verifyUrl || typeof parsed === 'string') return null;
  const { sourceId } = parsed;
  let status: number;
  try {
    const res = await fetchImpl(verifyUrl.replaceAll('{source_id}', encodeURIComponent(sourceId)), {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS),
      redirect: 'manual',
    });
    status = res.status;
    await res.body?.cancel();
  } catch {
    throw new AppError('SERVICE_UNAVAILABLE', 'The event gateway could not be reached to verify the token; nothing was saved.');
  }
  if (status >= 200 && status < 300) return null;
  if (status === 401 || status === 403 || status === 404)
    return { path: 'body.credentials.token', message: 'was refused by the event gateway' };
  throw new AppError('SERVICE_UNAVAILABLE', `The event gateway answered ${status} when asked to verify the token; nothing was saved.`);
}
