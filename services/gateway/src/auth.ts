import { timingSafeEqual, createHash } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { AppError } from '@switchyard/shared/errors.ts';

export const TOKEN_TTL_SECONDS = 24 * 60 * 60;
/** How far a token's `iat` may lie ahead of our clock (clocks of issuers drift a little). */
export const TOKEN_CLOCK_SKEW_SECONDS = 60;
const ISSUER = 'switchyard';

/** Who is calling: the operator (admin API key) or one tenant (tenant JWT). */
export type Principal = { kind: 'admin' } | { kind: 'tenant'; tenantId: string };

export interface Auth {
  authenticate(authorization: string | undefined): Promise<Principal>;
  issueTenantToken(tenantId: string, now?: Date): Promise<string>;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export function createAuth(apiKey: string, jwtSecret: string): Auth {
  const keyDigest = digest(apiKey);
  const secret = new TextEncoder().encode(jwtSecret);
  return {
    async authenticate(authorization) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      if (!m?.[1]) throw new AppError('UNAUTHORIZED');
      const token = m[1];
      // Comparing digests keeps the comparison constant-time whatever the token length.
      if (timingSafeEqual(digest(token), keyDigest)) return { kind: 'admin' };
      try {
        // A tenant token must say when it ends, within the lifetime we issue, and not be issued in the
        // future: a token without exp (or with a far one) would be a tenant key for ever.
        const { payload } = await jwtVerify(token, secret, {
          algorithms: ['HS256'],
          issuer: ISSUER,
          requiredClaims: ['exp', 'iat', 'sub'],
        });
        const { exp, iat } = payload as { exp: number; iat: number };
        if (iat > Date.now() / 1000 + TOKEN_CLOCK_SKEW_SECONDS) throw new Error('token issued in the future');
        if (exp - iat > TOKEN_TTL_SECONDS) throw new Error('token lifetime too long');
        if (typeof payload.sub !== 'string' || !payload.sub) throw new Error('token has no subject');
        return { kind: 'tenant', tenantId: payload.sub };
      } catch {
        throw new AppError('UNAUTHORIZED', 'The token is invalid or has expired.');
      }
    },
    async issueTenantToken(tenantId, now = new Date()) {
      const iat = Math.floor(now.getTime() / 1000);
      return new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setSubject(tenantId)
        .setIssuedAt(iat)
        .setExpirationTime(iat + TOKEN_TTL_SECONDS)
        .sign(secret);
    },
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Only the admin API key may call the route: a tenant token is refused before the request is read. */
    adminOnly?: boolean;
  }
}

/** Admin-only routes refuse tenant tokens with 403 (a missing credential is 401, raised earlier). */
export function requireAdmin(p: Principal): void {
  if (p.kind !== 'admin') throw new AppError('FORBIDDEN', 'This route requires the admin API key.');
}

/** A tenant token may only touch its own tenant. */
export function requireTenantAccess(p: Principal, tenantId: string): void {
  if (p.kind === 'tenant' && p.tenantId !== tenantId) throw new AppError('FORBIDDEN', 'The token does not grant access to this tenant.');
}
