/**
 * Moving an ingested or failed file without ever overwriting anything: a name already taken in
 * the target folder gets a suffix (`report (2).pdf`). The move is a hard link plus unlink, so
 * that "already there" is decided by the file system atomically; across file systems it is an
 * exclusive copy, then the unlink. A crash between the two leaves the file in both places, never
 * in none: it is then uploaded once more (at-least-once). Where a hard link is not allowed (Linux
 * `fs.protected_hardlinks` refuses one to a file of another user that this user cannot read and
 * write, and some file systems have none) it is a rename after checking that the name is free.
 */
import * as fsp from 'fs/promises';
import { constants } from 'fs';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { fittedName } from '../../api/filename';

const ERROR_FILE_SUFFIX = '.error.json';

/** Most suffixes tried before giving up (a folder with that many copies of one name). */
const MAX_SUFFIX = 10000;

/**
 * `name (n).ext` for n >= 2; `name` itself for n = 1; shortened so that it and `reserve` more
 * bytes are a valid name (a long name's copy, or its `.error.json` beside it).
 */
export function suffixedName(name: string, n: number, reserve = 0): string {
  return fittedName(name, n <= 1 ? '' : ` (${n})`, reserve);
}

/**
 * Puts `file` into `folder` under its own name or the first free suffixed one (leaving room for
 * `reserve` more bytes in the name); returns the new path.
 */
export async function moveWithoutOverwrite(file: string, folder: string, name = path.basename(file), reserve = 0): Promise<string> {
  await fsp.mkdir(folder, { recursive: true });
  for (let n = 1; n <= MAX_SUFFIX; n++) {
    const target = path.join(folder, suffixedName(name, n, reserve));
    try {
      await fsp.link(file, target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue;
      if (code === 'EXDEV') {
        try {
          await fsp.copyFile(file, target, constants.COPYFILE_EXCL);
        } catch (copyErr) {
          if ((copyErr as NodeJS.ErrnoException).code === 'EEXIST') continue;
          throw copyErr;
        }
      } else if (code === 'EPERM' || code === 'EACCES' || code === 'ENOTSUP' || code === 'EMLINK' || code === 'ENOSYS') {
        if (await exists(target)) continue;
        await fsp.rename(file, target);
        return target;
      } else {
        throw err;
      }
    }
    try {
      await fsp.unlink(file);
    } catch (err) {
      // Source removed meanwhile: the target is the only copy. Else undo, so that each try does
      // not leave one more `name (n)` copy behind.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return target;
      await fsp.unlink(target).catch(() => undefined);
      throw err;
    }
    return target;
  }
  throw new Error(`${folder}: more than ${MAX_SUFFIX} files named ${name} already`);
}

async function exists(file: string): Promise<boolean> {
  try {
    await fsp.lstat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Writes `text` to `file` through a temporary file and a rename, so a reader never sees half of it. */
export async function writeFileAtomically(file: string, text: string): Promise<void> {
  // A short name of its own: `file` may already be as long as a name can be.
  const temp = path.join(path.dirname(file), `.${process.pid}-${randomBytes(6).toString('hex')}.tmp`);
  await fsp.writeFile(temp, text, { flag: 'wx' });
  try {
    await fsp.rename(temp, file);
  } catch (err) {
    await fsp.unlink(temp).catch(() => undefined);
    throw err;
  }
}

/**
 * Moves a file that failed for good into `folder` (never overwriting) with `<name>.error.json`
 * beside it. Throws when the file cannot be moved; a trouble writing the error file is returned.
 */
export async function moveWithErrorFile(file: string, folder: string, record: object): Promise<{ movedTo: string; errorFile: string; problem?: string }> {
  const movedTo = await moveWithoutOverwrite(file, folder, path.basename(file), Buffer.byteLength(ERROR_FILE_SUFFIX));
  const errorFile = `${movedTo}${ERROR_FILE_SUFFIX}`;
  try {
    await writeFileAtomically(errorFile, JSON.stringify(record, null, 2) + '\n');
    return { movedTo, errorFile };
  } catch (err) {
    return { movedTo, errorFile, problem: `${errorFile}: ${(err as Error).message}` };
  }
}
