// Entry: take the token and theme from the URL, apply branding, then render the app or the
// "session ended" page.
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { ApiError, configureApi } from './api.ts';
import { App } from './App.tsx';
import { Expired } from './pages/Expired.tsx';
import { askOpenTabs, currentSession, endSession, shareSession, takeFromUrl } from './session.ts';
import { applyBrand, applyTheme, initialTheme, readSettings } from './settings.ts';
import './styles.css';

takeFromUrl();
// A tab opened without the portal link takes the session of an open portal tab, if there is one.
void (currentSession() === 'missing' ? askOpenTabs() : Promise.resolve(true)).then(start);

function start() {
  const settings = readSettings();
  applyBrand(settings);
  applyTheme(initialTheme(settings));

  const root = createRoot(document.getElementById('root') as HTMLElement);

  function showExpired(reason: 'missing' | 'expired' | 'ended') {
    endSession();
    root.render(<Expired settings={settings} reason={reason} />);
  }

  const session = currentSession();
  if (typeof session === 'string') {
    showExpired(session);
  } else {
    shareSession();
    configureApi(session.token, session.tenantId, showExpired);
    // The token's own expiry ends the session even when no request is made.
    window.setTimeout(() => showExpired('expired'), Math.min(session.expiresAt - Date.now(), 2 ** 31 - 1));
    const queries = new QueryClient({
      defaultOptions: {
        queries: {
          // Client errors (4xx) will not change by asking again.
          retry: (n, err) => !(err instanceof ApiError && err.status < 500) && n < 2,
          refetchOnWindowFocus: false,
        },
      },
    });
    root.render(
      <StrictMode>
        <QueryClientProvider client={queries}>
          <BrowserRouter basename="/portal">
            <App settings={settings} tenantId={session.tenantId} />
          </BrowserRouter>
        </QueryClientProvider>
      </StrictMode>,
    );
  }
}
