// Prints .env.example from the configuration catalogue: node infra/env-example.ts > .env.example
// (shared/test/config.test.ts fails when the committed file drifts from the catalogue).
import { SECTIONS, type SectionName, type Setting } from '../shared/src/config/index.ts';

/** Who reads each section, as its heading says. */
const READERS: Record<SectionName, string> = {
  common: 'every service',
  gateway: 'the gateway',
  router: 'the router',
  sender: 'the sender',
  attempts: 'the attempts service',
  embedded: 'embedded mode (npm start) only',
};

export function renderEnvExample(): string {
  const lines = ['# Switchyard configuration. Generated from shared/src/config/ by infra/env-example.ts.', ''];
  for (const [section, settings] of Object.entries(SECTIONS) as [SectionName, Record<string, Setting>][]) {
    lines.push(`# ---- ${section}: read by ${READERS[section]} (shared/src/config/${section}.ts) ----`, '');
    for (const [name, s] of Object.entries(settings)) {
      const notes = [...(s.required ? ['required'] : []), ...(s.minLength !== undefined ? [`at least ${s.minLength} characters`] : [])];
      lines.push(`# ${s.description}${notes.length ? ` (${notes.join('; ')})` : ''}`);
      lines.push(`${s.required ? '' : '# '}${name}=${s.default ?? ''}`);
      lines.push('');
    }
  }
  return lines.join('\n');
}

if (import.meta.main) process.stdout.write(renderEnvExample());
