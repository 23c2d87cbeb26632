// The portal in a real browser against every service its own process (Kafka and Postgres of the
// test command), as production runs it (see flow.ts); with branding settings and a forced theme.
import t from 'tap';
import { portalFlow } from './flow.ts';

t.test('the portal end to end in Chromium, a process per service', { timeout: 600_000 }, async (t) => {
  await portalFlow(t, { screenshots: false, branding: { brandColor: '#7c3aed', forceTheme: 'dark', logo: true } });
});
