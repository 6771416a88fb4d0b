/**
 * The emulator's limits on what one upload may cost (it runs on users' machines and, with
 * --host, on a network): the size of the uploaded file, and how far a zip archive may expand,
 * bounded by a ratio to the archive's size, by a total and by its number of entries (each becomes
 * an asset, a file and a change). CLI: --max-upload, --max-zip-ratio, --max-zip-size, --max-zip-entries.
 */
export interface UploadLimits {
  /** Largest uploaded file, in bytes. */
  maxUploadBytes: number;
  /** Largest expanded size of a zip archive as a multiple of the archive's own size. */
  maxZipRatio: number;
  /** Largest expanded size of a zip archive, in bytes. */
  maxZipBytes: number;
  /** Most entries (files and folders) in a zip archive. */
  maxZipEntries: number;
}

/** 10 GB uploads, zips that expand at most 100 times their size, to 10 GB and 10,000 entries at most. */
export const DEFAULT_UPLOAD_LIMITS: UploadLimits = { maxUploadBytes: 10e9, maxZipRatio: 100, maxZipBytes: 10e9, maxZipEntries: 10000 };

/** Checks limits given as options; missing ones take the default. */
export function uploadLimits(given: Partial<UploadLimits> = {}): UploadLimits {
  const limits = { ...DEFAULT_UPLOAD_LIMITS, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) } as UploadLimits;
  for (const [name, value] of Object.entries(limits)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a number above 0`);
  }
  return limits;
}

/** `500MB`, `10GB`, `1.5GiB`, `1048576` -> bytes. */
export function parseSize(text: string, option: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(|B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.exec(text.trim());
  if (!m) throw new Error(`${option} must be a size such as 500MB, 10GB or 2GiB, got ${JSON.stringify(text)}`);
  const unit = m[2].toLowerCase();
  const factor: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };
  const bytes = Math.floor(Number(m[1]) * factor[unit]);
  if (!(bytes > 0)) throw new Error(`${option} must be above 0, got ${JSON.stringify(text)}`);
  return bytes;
}
