import { useEffect, useState } from 'react';
import { type PortalSettings, safeUrl } from '../settings.ts';

const REDIRECT_SECONDS = 5;

const TEXT = {
  expired: ['Your session has expired', 'For your security, portal sessions last a limited time. Open the portal again from'],
  ended: ['Your session has ended', 'This portal is no longer available to you. Open the portal again from'],
  missing: ['No session', 'This page needs a portal link, or another portal tab open in this browser. Open the portal from'],
} as const;

/**
 * The session ended (or never began): say so, and go back to the product after a few seconds. Not
 * when there never was one: a portal address opened on its own stays, so the user sees why.
 */
export function Expired({ settings, reason }: { settings: PortalSettings; reason: 'missing' | 'expired' | 'ended' }) {
  const back = safeUrl(settings.returnUrl);
  const leave = Boolean(back) && reason !== 'missing';
  const [left, setLeft] = useState(REDIRECT_SECONDS);
  useEffect(() => {
    if (!leave) return;
    const timer = window.setInterval(() => setLeft((n) => n - 1), 1000);
    return () => window.clearInterval(timer);
  }, [leave]);
  useEffect(() => {
    if (leave && back && left <= 0) window.location.assign(back);
  }, [leave, back, left]);
  const org = settings.organizationName || 'the application';
  return (
    <main className="expired" aria-labelledby="expired-title">
      <div className="card">
        <h1 id="expired-title">{TEXT[reason][0]}</h1>
        <p>{`${TEXT[reason][1]} ${org}.`}</p>
        {back ? (
          <>
            <p>
              <a className="button primary" href={back}>
                Return to {settings.organizationName || 'the application'}
              </a>
            </p>
            {leave ? (
              <p className="muted" aria-live="polite">
                Taking you back in {Math.max(left, 0)} s.
              </p>
            ) : null}
          </>
        ) : null}
      </div>
    </main>
  );
}
