// The tenant portal's pages: the static assets services/portal builds (vite), served at /portal.
//
// Contract: GET /portal and every GET /portal/<path> that is not a built file answer the app's
// index.html (client-side routes), with the PORTAL_* branding settings embedded as inert JSON, no
// caching, and headers that keep the token of the portal URL from leaking: `Referrer-Policy:
// no-referrer` (the first page load carries it in its query) and a CSP allowing scripts of this
// origin only. Built files (/portal/assets/*, hashed names) are cached for a year. The pages need no
// credential: the app reads the token from its URL and calls the API with it. When the app has not
// been built, /portal answers 503 saying how to build it (npm start builds it when missing).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Config } from '@switchyard/shared/config/index.ts';

/** Where `npm run build -w @switchyard/portal` writes the app (also in the `npm run build` tree). */
export const PORTAL_DIST = fileURLToPath(new URL('../../portal/dist/', import.meta.url));

/** What the app reads at start (no secret: every visitor of /portal sees it). */
export function portalSettings(config: Config) {
  return {
    organizationName: config.PORTAL_ORGANIZATION_NAME,
    brandColor: config.PORTAL_BRAND_COLOR,
    logo: config.PORTAL_LOGO,
    logoDark: config.PORTAL_LOGO_DARK,
    favicon: config.PORTAL_FAVICON_URL,
    forceTheme: config.PORTAL_FORCE_THEME,
    returnUrl: config.PORTAL_REFERER_URL,
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** index.html with the settings as a JSON script (never executed; `<` escaped so it cannot end the tag). */
export function renderIndex(template: string, config: Config): string {
  const settings = JSON.stringify(portalSettings(config)).replace(/</g, '\\u003c');
  const title = config.PORTAL_ORGANIZATION_NAME
    ? `${escapeHtml(config.PORTAL_ORGANIZATION_NAME)} · Event destinations`
    : 'Event destinations';
  let html = template.replace(/<title>[^<]*<\/title>/, `<title>${title}</title>`);
  if (config.PORTAL_FAVICON_URL)
    html = html.replace(/<link rel="icon"[^>]*>/, `<link rel="icon" href="${escapeHtml(config.PORTAL_FAVICON_URL)}">`);
  return html.replace('</head>', `<script id="portal-settings" type="application/json">${settings}</script></head>`);
}

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // Charts and type icons set style attributes; logos and favicons may live on another origin.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: https: http:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ');

const SAFE_PATH = /^[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*$/;

export function portalRoutes(config: Config, dir: string = PORTAL_DIST) {
  return async (app: FastifyInstance) => {
    const indexFile = join(dir, 'index.html');
    const built = existsSync(indexFile);
    const html = built ? renderIndex(readFileSync(indexFile, 'utf8'), config) : '';
    if (built) await app.register(fastifyStatic, { root: dir, serve: false, index: false });

    const page = async (reply: FastifyReply) => {
      void reply
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', CSP)
        .type('text/html; charset=utf-8');
      if (!built) {
        return reply
          .status(503)
          .send(
            '<!doctype html><title>Portal not built</title><p>The portal has not been built. Run <code>npm run build -w @switchyard/portal</code> (<code>npm start</code> does it when it is missing) and restart.</p>',
          );
      }
      return reply.send(html);
    };
    // Hidden from the API document: these are pages, not API operations.
    app.get('/portal', { config: { public: true }, schema: { hide: true } }, async (_req, reply) => page(reply));
    app.get('/portal/*', { config: { public: true }, schema: { hide: true } }, async (req, reply) => {
      const path = (req.params as { '*': string })['*'];
      // Built files are under assets/ or at the top (favicon.svg); anything else is a client-side
      // route of the app, also when it ends like a file name (a destination id such as orders.v2).
      if (built && path !== 'index.html' && (path.startsWith('assets/') || (!path.includes('/') && /\.[a-z0-9]+$/i.test(path)))) {
        // Only plain names: a `..` segment or an odd character is not a file of the app.
        if (!SAFE_PATH.test(path) || path.split('/').some((s) => s.startsWith('.'))) return reply.callNotFound();
        const immutable = path.startsWith('assets/');
        return reply
          .header('x-content-type-options', 'nosniff')
          .sendFile(path, { cacheControl: true, immutable, maxAge: immutable ? '365d' : '1h' });
      }
      return page(reply);
    });
  };
}
