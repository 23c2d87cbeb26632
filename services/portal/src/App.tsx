import { useState } from 'react';
import { Link, Navigate, NavLink, Route, Routes } from 'react-router';
import { NoticeProvider } from './components.tsx';
import { AttemptPage } from './pages/Attempt.tsx';
import { DestinationPage } from './pages/Destination.tsx';
import { DestinationsPage } from './pages/Destinations.tsx';
import { NewDestinationPage } from './pages/NewDestination.tsx';
import { type Theme, storeTheme } from './session.ts';
import { applyTheme, initialTheme, type PortalSettings, safeUrl } from './settings.ts';

export function App({ settings, tenantId }: { settings: PortalSettings; tenantId: string }) {
  const [theme, setTheme] = useState<Theme>(() => initialTheme(settings));
  const toggle = () => {
    const next = theme === 'dark' ? 'light' : 'dark';
    storeTheme(next);
    applyTheme(next);
    setTheme(next);
  };
  const logo = safeUrl((theme === 'dark' && settings.logoDark) || settings.logo);
  return (
    <NoticeProvider>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand" aria-label={`${settings.organizationName || 'Portal'}: destinations`}>
          {logo ? <img src={logo} alt="" className="logo" /> : <span className="logo-mark" aria-hidden="true" />}
          <span className="org">{settings.organizationName || 'Event destinations'}</span>
        </Link>
        <nav aria-label="Main">
          <NavLink to="/" end>
            Destinations
          </NavLink>
        </nav>
        <span className="tenant" title="Tenant">
          {tenantId}
        </span>
        {settings.forceTheme ? null : (
          <button
            type="button"
            className="ghost icon-button"
            onClick={toggle}
            aria-label={`Switch to ${theme === 'dark' ? 'light' : 'dark'} theme`}
          >
            {theme === 'dark' ? '☀' : '☾'}
          </button>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        <Routes>
          <Route path="/" element={<DestinationsPage />} />
          <Route path="/new" element={<NewDestinationPage />} />
          <Route path="/destinations/:id" element={<DestinationPage tab="settings" />} />
          <Route path="/destinations/:id/deliveries" element={<DestinationPage tab="deliveries" />} />
          <Route path="/destinations/:id/attempts/:attemptId" element={<AttemptPage />} />
          <Route path="*" element={<Navigate to="/" replace />} />
        </Routes>
      </main>
    </NoticeProvider>
  );
}
