// Branding and behaviour settings, embedded by the gateway in index.html (PORTAL_* configuration).
import { type Theme, storedTheme } from './session.ts';

export interface PortalSettings {
  organizationName: string;
  brandColor: string;
  logo: string;
  logoDark: string;
  favicon: string;
  forceTheme: '' | Theme;
  returnUrl: string;
}

const DEFAULTS: PortalSettings = {
  organizationName: '',
  brandColor: '',
  logo: '',
  logoDark: '',
  favicon: '',
  forceTheme: '',
  returnUrl: '',
};

export function readSettings(): PortalSettings {
  const el = document.getElementById('portal-settings');
  if (!el?.textContent) return DEFAULTS;
  try {
    return { ...DEFAULTS, ...(JSON.parse(el.textContent) as Partial<PortalSettings>) };
  } catch {
    return DEFAULTS;
  }
}

/** Forced theme, else the one asked for (theme query, kept for the tab), else the browser's preference. */
export function initialTheme(s: PortalSettings): Theme {
  if (s.forceTheme) return s.forceTheme;
  return storedTheme() ?? (window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
}

export function applyTheme(theme: Theme): void {
  document.documentElement.dataset.theme = theme;
  document.documentElement.style.colorScheme = theme;
}

export function applyBrand(s: PortalSettings): void {
  if (s.brandColor && CSS.supports('color', s.brandColor)) document.documentElement.style.setProperty('--brand', s.brandColor);
}

/** An http(s) URL, or nothing: a return URL must not run script (javascript:). */
export function safeUrl(u: string): string | null {
  try {
    const url = new URL(u, window.location.href);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.toString() : null;
  } catch {
    return null;
  }
}
