/**
 * Where a folder is: "inside" on path strings, and real paths (symbolic links resolved), so that
 * the done and failed folders are known whatever spelling reaches them.
 */
import * as fsp from 'fs/promises';
import * as path from 'path';

/** True when `inner` is `outer` or below it (absolute paths, compared as written). */
export function isInside(inner: string, outer: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * `folder` with symbolic links resolved; a folder that does not exist yet is its nearest
 * ancestor that can be resolved, joined with the rest (it is made there later).
 */
export async function realPath(folder: string): Promise<string> {
  const rest: string[] = [];
  let at = folder;
  for (;;) {
    try {
      return path.join(await fsp.realpath(at), ...rest);
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return folder;
      rest.unshift(path.basename(at));
      at = parent;
    }
  }
}
