import { ATTEMPTS_SETTINGS } from './attempts.ts';
import { COMMON_SETTINGS } from './common.ts';
import { EMBEDDED_SETTINGS } from './embedded.ts';
import { GATEWAY_SETTINGS } from './gateway.ts';
import { ROUTER_SETTINGS } from './router.ts';
import { SENDER_SETTINGS } from './sender.ts';
import type { Setting } from './setting.ts';

/**
 * The configuration catalogue: every environment setting the project reads, grouped in sections,
 * one per service (each in its own file) plus the settings every process reads (common.ts). Nothing
 * else in the code spells an environment variable name. A service validates the sections it reads
 * (SERVICE_SECTIONS); embedded mode and the stack launcher, which run every service, validate all.
 */
export const SECTIONS = {
  common: COMMON_SETTINGS,
  gateway: GATEWAY_SETTINGS,
  router: ROUTER_SETTINGS,
  sender: SENDER_SETTINGS,
  attempts: ATTEMPTS_SETTINGS,
  embedded: EMBEDDED_SETTINGS,
} as const;
export type SectionName = keyof typeof SECTIONS;

/** Every setting, section by section (the order of .env.example). */
export const SETTINGS = {
  ...COMMON_SETTINGS,
  ...GATEWAY_SETTINGS,
  ...ROUTER_SETTINGS,
  ...SENDER_SETTINGS,
  ...ATTEMPTS_SETTINGS,
  ...EMBEDDED_SETTINGS,
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;
type ValueOf<S extends Setting> = S['kind'] extends 'integer'
  ? number
  : S['kind'] extends 'boolean'
    ? boolean
    : S['kind'] extends 'list'
      ? readonly string[]
      : S['kind'] extends 'integer-list'
        ? readonly number[]
        : string;
/** Every setting with its value: what embedded mode loads. A service on its own has its sections' only. */
export type Config = { readonly [K in SettingName]: ValueOf<(typeof SETTINGS)[K]> };

/** The sections each process reads. A service run on its own needs nothing set outside them. */
export const SERVICE_SECTIONS = {
  gateway: ['common', 'gateway'],
  router: ['common', 'router'],
  sender: ['common', 'sender'],
  attempts: ['common', 'attempts'],
  embedded: Object.keys(SECTIONS) as SectionName[],
} as const satisfies Record<string, readonly SectionName[]>;
export type ServiceName = keyof typeof SERVICE_SECTIONS;

/** The names of the settings a process reads; a process not named here reads every setting. */
export function settingsOf(service: string): SettingName[] {
  const sections: readonly SectionName[] =
    (SERVICE_SECTIONS as Record<string, readonly SectionName[]>)[service] ?? (Object.keys(SECTIONS) as SectionName[]);
  return sections.flatMap((s) => Object.keys(SECTIONS[s]) as SettingName[]);
}
