/**
 * The configuration: the catalogue of every setting, one section per service (catalogue.ts and the
 * section files beside it), and its loading (load.ts). Import from here.
 */
export {
  type Config,
  SECTIONS,
  type SectionName,
  SERVICE_SECTIONS,
  type ServiceName,
  SETTINGS,
  type SettingName,
  settingsOf,
} from './catalogue.ts';
export { ConfigError, describeConfig, isHostPort, loadConfig, loadServiceConfig, splitList } from './load.ts';
export { SECRET_MIN_LENGTH, type Setting } from './setting.ts';
