// Prints .env.example from the configuration catalogue: node infra/env-example.ts > .env.example
// (shared/test/config.test.ts fails when the committed file drifts from the catalogue).
import { SETTINGS } from '../shared/src/config/index.ts';

export function renderEnvExample(): string {
  const lines = ['# Switchyard configuration. Generated from shared/src/config/index.ts by infra/env-example.ts.', ''];
  for (const [name, s] of Object.entries(SETTINGS)) {
    const notes = [
      ...('required' in s && s.required ? ['required'] : []),
      ...('minLength' in s ? [`at least ${s.minLength} characters`] : []),
    ];
    lines.push(`# ${s.description}${notes.length ? ` (${notes.join('; ')})` : ''}`);
    lines.push(`${'required' in s && s.required ? '' : '# '}${name}=${'default' in s ? s.default : ''}`);
    lines.push('');
  }
  return lines.join('\n');
}

if (import.meta.main) process.stdout.write(renderEnvExample());
