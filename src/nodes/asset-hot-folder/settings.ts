/**
 * asset-hot-folder's editor settings, checked once at start. A bad one is a SettingError naming
 * the setting (editor label and property) and the rule; the node then stays red and watches nothing.
 */
import * as path from 'path';
import { isBlankSetting, numberSetting, SettingError } from '../shared/fields';
import { retriesSetting } from '../shared/retry';
import type { UploadFieldsConfig } from '../shared/upload-fields';
import { isInside } from './paths';
import { patternList } from './patterns';
import type { HotFolderOptions } from './types';

/** Editor properties. */
export interface AssetHotFolderConfig extends UploadFieldsConfig {
  id: string;
  name?: string;
  server?: string;
  folder?: string;
  /** Make the folder when it is missing. */
  createFolder?: boolean;
  recursive?: boolean;
  /** `events` (file-system events + rescan) or `polling` (rescan only). */
  mode?: string;
  rescanSeconds?: string | number;
  untouchedSeconds?: string | number;
  include?: string;
  exclude?: string;
  maxParallel?: string | number;
  /** `move` (to the done folder) or `delete`. */
  afterUpload?: string;
  doneFolder?: string;
  failedFolder?: string;
  retries?: string | number;
  /** `keep` (below the destination) or `flatten`. */
  subfolders?: string;
}

/** The watcher's options that come from the node's settings, and where subfolders go. */
export type HotFolderSettings = Omit<HotFolderOptions<unknown>, 'upload' | 'retryBaseMs'> & { keepSubfolders: boolean };

/** A checkbox setting (a flow may hold it as text). */
const checked = (value: unknown) => value === true || value === 'true';

export const DEFAULT_UNTOUCHED_S = 5;
export const DEFAULT_RESCAN_S = 5;
export const DEFAULT_PARALLEL = 2;
const MAX_PARALLEL = 32;

/**
 * The settings as the watcher takes them. `resolve` makes a path absolute as the core file nodes
 * do (fileWorkingDirectory, else the working directory).
 * @throws SettingError "<property> (<label>): <rule>"
 */
export function hotFolderSettings(config: AssetHotFolderConfig, resolve: (p: string) => string): HotFolderSettings {
  if (isBlankSetting(config.folder)) throw new SettingError('folder (Folder): is required: the folder to watch');
  const folder = path.resolve(resolve(String(config.folder).trim()));
  const seconds = (value: unknown, field: string, fallback: number) => numberSetting(value, field, fallback, n => n >= 0.1 && n <= 86400,
    'must be a number of seconds from 0.1 to 86400');
  const untouchedMs = Math.round(seconds(config.untouchedSeconds, 'untouchedSeconds (Untouched)', DEFAULT_UNTOUCHED_S) * 1000);
  const rescanMs = Math.round(seconds(config.rescanSeconds, 'rescanSeconds (Rescan)', DEFAULT_RESCAN_S) * 1000);
  // Digits only (spaces around allowed), as the editor's DamEditor.validateInFlight checks.
  const maxParallel = isBlankSetting(config.maxParallel) ? DEFAULT_PARALLEL
    : typeof config.maxParallel === 'number' ? config.maxParallel
      : /^\s*\d+\s*$/.test(String(config.maxParallel)) ? Number(config.maxParallel) : NaN;
  if (!Number.isInteger(maxParallel) || maxParallel < 1 || maxParallel > MAX_PARALLEL) {
    throw new SettingError(`maxParallel (Parallel): must be a whole number from 1 to ${MAX_PARALLEL}`);
  }
  let retries: number;
  try { retries = retriesSetting(config.retries); } catch (err) { throw new SettingError((err as Error).message); }

  const folderSetting = (value: unknown, field: string, fallback: string): string => {
    const target = isBlankSetting(value) ? path.join(folder, fallback) : path.resolve(resolve(String(value).trim()));
    if (isInside(folder, target)) {
      throw new SettingError(`${field}: must not be the watched folder ${folder} or a folder above it (files moved there would be taken again)`);
    }
    return target;
  };
  const doneFolder = config.afterUpload === 'delete' ? null : folderSetting(config.doneFolder, 'doneFolder (Done folder)', '.done');
  const failedFolder = folderSetting(config.failedFolder, 'failedFolder (Failed folder)', '.failed');
  if (doneFolder !== null && doneFolder === failedFolder) {
    throw new SettingError('failedFolder (Failed folder): must differ from the done folder, so that a failed file is never taken for an ingested one');
  }
  // asset-upload reads a blank one from the msg; a hot folder's files carry no msg.destination, so every file would fail.
  const fixedBlank = (value: unknown, type: string | undefined, fixed: string) => (type === undefined || type === '' || type === fixed) && isBlankSetting(value);
  if (fixedBlank(config.destination, config.destinationType, 'str') && fixedBlank(config.destinationFuid, config.destinationFuidType, 'num')) {
    throw new SettingError('destination (Destination) or destinationFuid (Folder fuid): one is required: the server folder to upload into, e.g. /inbox');
  }
  if (config.mode !== undefined && config.mode !== '' && config.mode !== 'events' && config.mode !== 'polling') {
    throw new SettingError(`mode (Watch): must be events or polling, got ${JSON.stringify(String(config.mode).slice(0, 20))}`);
  }
  return {
    folder, recursive: checked(config.recursive), createFolder: checked(config.createFolder),
    polling: config.mode === 'polling', rescanMs, untouchedMs,
    include: patternList(config.include), exclude: patternList(config.exclude),
    maxParallel, doneFolder, failedFolder, retries, keepSubfolders: config.subfolders !== 'flatten'
  };
}
