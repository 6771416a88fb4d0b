/**
 * Where a finished download goes: its temporary file is moved to the target name, and what
 * happens when a file of that name exists is the caller's choice ({@link IfExists}). Never a
 * silent replace of a file the user did not name: in folder mode the name is the server's.
 */
import { randomBytes } from 'crypto';
import * as fsp from 'fs/promises';
import * as path from 'path';
import { AssetApiError, invalidInput, type AssetOperation } from './errors';
import { errorForLocalFile } from './error-mapping';
import { fittedName } from './filename';

/** replace: the existing file is replaced (keeping its mode); keep-both: the new one gets a suffix ` (1)`; fail: an error, nothing changed. */
export type IfExists = 'replace' | 'keep-both' | 'fail';
export const IF_EXISTS: readonly IfExists[] = ['replace', 'keep-both', 'fail'];

/** Checks an `ifExists` option; `fallback` when not given. */
export function ifExistsOf(value: unknown, fallback: IfExists, operation: AssetOperation): IfExists {
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value === 'string' && (IF_EXISTS as readonly string[]).includes(value)) return value as IfExists;
  throw invalidInput('ifExists', 'must be replace, keep-both or fail', operation);
}

/**
 * The temporary name beside `target`: short and independent of the target's name, so that a
 * target name of up to 255 bytes (the usual file-system limit) still has a temporary one.
 */
export function temporaryNameFor(target: string): string {
  const name = path.join(path.dirname(target), `.dam-${randomBytes(6).toString('hex')}.part`);
  writing.add(name);
  return name;
}

/** Temporary files of this process's downloads under way (a sweep leaves them, however long one stalls). */
const writing = new Set<string>();

/** The download that made `temporary` is over (placed or failed). */
export function temporaryDone(temporary: string): void {
  writing.delete(temporary);
}

/**
 * The file a replacing download is renamed to: `target`, or the file a symbolic link there points
 * at (the link stays, as when the core file node writes through it). A device, FIFO or socket is
 * refused: a rename would put a plain file in its place (/dev/null, a pipe another program reads).
 * `followLink` false (a name the server chose): a link is replaced itself, never written through,
 * since it may point anywhere out of the folder.
 */
export async function replaceableTarget(target: string, operation: AssetOperation, followLink = true): Promise<string> {
  let found = await fsp.lstat(target).catch(() => undefined);
  if (found?.isSymbolicLink() && !followLink) return target;
  if (found?.isSymbolicLink()) {
    const real = await fsp.realpath(target).catch(() => undefined);
    if (real === undefined) throw invalidInput('path', `${target} is a symbolic link to nothing (a missing file or a loop): a download does not replace it`, operation);
    target = real;
    found = await fsp.stat(real).catch(() => undefined);
  }
  if (found === undefined || found.isFile() || found.isDirectory()) return target;
  throw invalidInput('path', `${target} is not a regular file (a device, pipe or socket): a download never writes over one`, operation);
}

/** A temporary file not written for this long is a killed process's: a running download writes on, or times out. */
const STALE_TEMPORARY_MS = 60 * 60 * 1000;
const TEMPORARY_NAME = /^\.dam-[0-9a-f]{12}\.part$/;
/** When each folder was last swept (at most once an hour each). */
const sweptAt = new Map<string, number>();

/**
 * Removes the temporary files a Node-RED killed mid-download left beside `temporary` (a `kill -9`
 * leaves them; each is as large as what had arrived), not this process's. Their age is measured
 * against `temporary`'s own time (just written), so a share whose clock differs from this one's
 * cannot make a fresh file look old. Best effort: a folder that cannot be read is left.
 */
export async function sweepTemporaries(temporary: string): Promise<void> {
  const folder = path.dirname(temporary);
  const now = (await fsp.stat(temporary).catch(() => undefined))?.mtimeMs;
  if (now === undefined || now - (sweptAt.get(folder) ?? -Infinity) < STALE_TEMPORARY_MS) return;
  if (sweptAt.size > 1000) sweptAt.clear();
  sweptAt.set(folder, now);
  const names = await fsp.readdir(folder).catch(() => [] as string[]);
  for (const name of names.filter((n) => TEMPORARY_NAME.test(n))) {
    const file = path.join(folder, name);
    if (writing.has(file)) continue;
    const stat = await fsp.lstat(file).catch(() => undefined);
    if (stat?.isFile() && now - stat.mtimeMs > STALE_TEMPORARY_MS) await fsp.rm(file, { force: true }).catch(() => undefined);
  }
}

/** `name (n).ext`, shortened to a valid name length when the name is long. */
function suffixed(target: string, n: number): string {
  return path.join(path.dirname(target), fittedName(path.basename(target), ` (${n})`));
}

/** Most ` (n)` suffixes tried before keep-both gives up. */
const MAX_SUFFIX = 999;

/**
 * Moves the complete `temporary` file to `target` as `ifExists` says; returns the final path.
 * fail and keep-both never replace a file, not even one created meanwhile: the file is linked
 * under the new name (refused when the name exists), then the temporary name removed. On a file
 * system without hard links it checks, then renames.
 */
export async function placeFile(temporary: string, target: string, ifExists: IfExists, operation: AssetOperation, followLink = true): Promise<string> {
  if (ifExists === 'replace') {
    target = await replaceableTarget(target, operation, followLink);
    const old = await fsp.lstat(target).catch(() => undefined);
    // The replaced file's permissions stay (a new file would get the default 0644 of the umask).
    if (old?.isFile()) await fsp.chmod(temporary, old.mode & 0o7777).catch(() => undefined);
    await fsp.rename(temporary, target).catch((err: unknown) => {
      throw errorForLocalFile(err, 'path', `cannot rename the downloaded file to ${target}`, operation);
    });
    return target;
  }
  const last = ifExists === 'fail' ? 0 : MAX_SUFFIX;
  for (let n = 0; n <= last; n++) {
    const candidate = n === 0 ? target : suffixed(target, n);
    if (await linkOrRenameNew(temporary, candidate, operation)) return candidate;
  }
  if (ifExists === 'fail') {
    throw new AssetApiError('invalid-input',
      `${operation}: ${target} exists and was left as it is (asset-download "If it exists": fail, option ifExists); choose replace or keep both, or remove the file`,
      { operation, field: 'ifExists', code: 'EEXIST' });
  }
  throw new AssetApiError('invalid-input', `${operation}: ${target} and its copies (1) to (${MAX_SUFFIX}) all exist`, { operation, field: 'ifExists', code: 'EEXIST' });
}

/** True when `temporary` now is `candidate` (which did not exist); false when `candidate` exists. */
async function linkOrRenameNew(temporary: string, candidate: string, operation: AssetOperation): Promise<boolean> {
  try {
    await fsp.link(temporary, candidate);
    await fsp.rm(temporary, { force: true });
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS' && code !== 'EMLINK') {
      throw errorForLocalFile(err, 'path', `cannot move the downloaded file to ${candidate}`, operation);
    }
  }
  // No hard links here: check, then rename (a file created in between would be replaced).
  if (await fsp.lstat(candidate).then(() => true, () => false)) return false;
  await fsp.rename(temporary, candidate).catch((err: unknown) => {
    throw errorForLocalFile(err, 'path', `cannot rename the downloaded file to ${candidate}`, operation);
  });
  return true;
}
