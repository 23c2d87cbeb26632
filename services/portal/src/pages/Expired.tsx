import { useEffect, useState } from 'react';
import { type PortalSettings, safeUrl } from '../settings.ts';

const REDIRECT_SECONDS = 5;

/** The session ended (or never began): say so, and go back to the product after a few seconds. */
export function Expired({ settings, reason }: { settings: PortalSettings; reason: 'missing' | 'expired' }) {
  const back = safeUrl(settings.returnUrl);
  const [left, setLeft] = useState(REDIRECT_SECONDS);
  useEffect(() => {
    if (!back) return;
    const timer = window.setInterval(() => setLeft((n) => n - 1), 1000);
    return () => window.clearInterval(timer);
  }, [back]);
  useEffect(() => {
    if (back && left <= 0) window.location.assign(back);
  }, [back, left]);
  const org = settings.organizationName || 'the application';
  return (
    <main className="expired" aria-labelledby="expired-title">
      <div className="card">
        <h1 id="expired-title">{reason === 'expired' ? 'Your session has expired' : 'No session'}</h1>
        <p>
          {reason === 'expired'
            ? `For your security, portal sessions last a limited time. Open the portal again from ${org}.`
            : `This page needs a portal link. Open the portal from ${org}.`}
        </p>
        {back ? (
          <>
            <p>
              <a className="button primary" href={back}>
                Return to {settings.organizationName || 'the application'}
              </a>
            </p>
            <p className="muted" aria-live="polite">
              Taking you back in {Math.max(left, 0)} s.
            </p>
          </>
        ) : null}
      </div>
    </main>
  );
}
