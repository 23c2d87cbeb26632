// The portal in a real browser against embedded mode (npm start), taking the screenshots of
// docs/portal/ (written there with PORTAL_SCREENSHOTS=1; see flow.ts).
import t from 'tap';

process.env.SWITCHYARD_E2E_MODE = 'embedded';
const { portalFlow } = await import('./flow.ts');

t.test('the portal end to end in Chromium, embedded mode', { timeout: 600_000 }, async (t) => {
  await portalFlow(t, { screenshots: true });
});
