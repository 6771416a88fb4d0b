/** What the hot folder (watcher.ts) keeps of each file it found, and the order uploads go in. */

/**
 * What a sent file is checked against before it is moved: its size and modification time, and its
 * inode and change time (a file renamed over it during the upload, as an atomic save does, is
 * another file even with the same size and time: a new inode, changed then).
 */
export interface Version { size: number; mtimeMs: number; ino: number; ctimeMs: number }

/**
 * True when `stat` is still `sent`. Another file needs both a new inode and a new change time: a
 * share whose inode numbers are not stable (CIFS without serverino) must not make every file look
 * new at each check.
 */
export function sameVersion(stat: Version, sent: Version): boolean {
  return stat.size === sent.size && stat.mtimeMs === sent.mtimeMs && (stat.ino === sent.ino || stat.ctimeMs === sent.ctimeMs);
}

export interface Tracked extends Version {
  relativePath: string;
  /** When this watcher last saw size or mtime change (or first saw the file). */
  since: number;
  /** When this watcher last read size and mtime. */
  checkedAt: number;
  /** stuck: uploaded (or failed) but it could not be moved; left alone until size or mtime change. */
  state: 'settling' | 'queued' | 'uploading' | 'stuck';
  /** Sends of this version. */
  attempts: number;
  /** Its failures that count towards Retries: those that started an outage, and a gateway's 504 to it as a probe. */
  counted: number;
  /** When it last failed transiently: queued behind the files that never failed. */
  failedAt?: number;
  /** An empty file was reported once. */
  emptyReported?: boolean;
}

/** Upload order: files that never failed first, oldest modification time first; then the others in the order they failed. */
export function queueOrder(a: Tracked, b: Tracked): number {
  if (a.failedAt !== undefined || b.failedAt !== undefined) return (a.failedAt ?? -Infinity) - (b.failedAt ?? -Infinity);
  return a.mtimeMs - b.mtimeMs || (a.relativePath < b.relativePath ? -1 : 1);
}

/** Files waiting (empty ones aside: they are never uploaded), uploading, and stuck (not movable). */
export function countByState(files: Iterable<Tracked>): { waiting: number; uploading: number; stuck: number } {
  let waiting = 0;
  let uploading = 0;
  let stuck = 0;
  for (const f of files) {
    if (f.state === 'uploading') uploading++;
    else if (f.state === 'stuck') stuck++;
    else if (f.size > 0) waiting++;
  }
  return { waiting, uploading, stuck };
}
