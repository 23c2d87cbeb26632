// The portal session: the tenant token of the portal URL, moved into sessionStorage on load and out
// of the address bar (history.replaceState), so it is not kept in history, bookmarks, screenshots or
// the Referer of later requests. It is never logged. The tab's session ends with the token's expiry.
// A portal page opened in a new tab (a link opened with Ctrl or the middle button, or its address
// pasted) starts without one: it asks the portal's open tabs of this origin for theirs
// (BroadcastChannel), so a tab never needs the portal link again while another one is open.

const TOKEN_KEY = 'switchyard.portal.token';
const THEME_KEY = 'switchyard.portal.theme';

export type Theme = 'light' | 'dark';

export interface Session {
  token: string;
  tenantId: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

/** Reads token and theme from the URL (then removes them from it), else from the tab's storage. */
export function takeFromUrl(): void {
  const url = new URL(window.location.href);
  const token = url.searchParams.get('token');
  const theme = url.searchParams.get('theme');
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  if (theme === 'light' || theme === 'dark') sessionStorage.setItem(THEME_KEY, theme);
  if (url.searchParams.has('token') || url.searchParams.has('theme') || url.searchParams.has('tenant_id')) {
    for (const k of ['token', 'theme', 'tenant_id']) url.searchParams.delete(k);
    window.history.replaceState(window.history.state, '', `${url.pathname}${url.search}${url.hash}`);
  }
}

function claims(token: string): { sub?: unknown; exp?: unknown } | null {
  const part = token.split('.')[1];
  if (!part) return null;
  try {
    const json = atob(
      part
        .replace(/-/g, '+')
        .replace(/_/g, '/')
        .padEnd(Math.ceil(part.length / 4) * 4, '='),
    );
    return JSON.parse(json) as { sub?: unknown; exp?: unknown };
  } catch {
    return null;
  }
}

/** The session, or why there is none. The server checks the signature; this only reads the claims. */
export function currentSession(now = Date.now()): Session | 'missing' | 'expired' {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) return 'missing';
  const c = claims(token);
  if (!c || typeof c.sub !== 'string' || typeof c.exp !== 'number') return 'expired';
  const expiresAt = c.exp * 1000;
  if (expiresAt <= now) return 'expired';
  return { token, tenantId: c.sub, expiresAt };
}

export function endSession(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

export function storedTheme(): Theme | null {
  const t = sessionStorage.getItem(THEME_KEY);
  return t === 'light' || t === 'dark' ? t : null;
}

export function storeTheme(t: Theme): void {
  sessionStorage.setItem(THEME_KEY, t);
}

const CHANNEL = 'switchyard.portal.session';
/** How long a tab without a session waits for an open one to answer. */
const ASK_MS = 400;

/** Answers other tabs of this portal that ask for the session, while this tab has a live one. */
export function shareSession(): void {
  if (typeof BroadcastChannel === 'undefined') return;
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (m: MessageEvent) => {
    if (m.data !== 'ask' || typeof currentSession() === 'string') return;
    channel.postMessage({ token: sessionStorage.getItem(TOKEN_KEY), theme: storedTheme() });
  };
}

/** Asks the open tabs for their session; true when one answered (then it is this tab's too). */
export function askOpenTabs(): Promise<boolean> {
  if (typeof BroadcastChannel === 'undefined') return Promise.resolve(false);
  return new Promise((resolve) => {
    const channel = new BroadcastChannel(CHANNEL);
    const done = (answered: boolean) => {
      window.clearTimeout(timer);
      channel.close();
      resolve(answered);
    };
    const timer = window.setTimeout(() => done(false), ASK_MS);
    channel.onmessage = (m: MessageEvent) => {
      const d = m.data as { token?: unknown; theme?: unknown } | null;
      if (!d || typeof d.token !== 'string') return;
      sessionStorage.setItem(TOKEN_KEY, d.token);
      if (d.theme === 'light' || d.theme === 'dark') storeTheme(d.theme);
      done(true);
    };
    channel.postMessage('ask');
  });
}
