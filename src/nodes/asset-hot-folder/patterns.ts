/**
 * Which files of a hot folder are candidates: not hidden or temporary (the defaults below, on
 * every path segment), matching an include pattern when there are any, matching no exclude
 * pattern. Patterns are globs (picomatch); one without a slash matches the file name at any
 * depth (`*.pdf`), one with a slash the path below the watched folder (`scans/**\/*.tif`).
 */
import picomatch from 'picomatch';

/** Hidden and temporary names never taken: partial downloads, office lock files, OS metadata. */
export const IGNORED_BY_DEFAULT = ['.*', '*.part', '*.tmp', '*.crdownload', '~$*', 'Thumbs.db', '.DS_Store'] as const;

export type PathTest = (relativePath: string) => boolean;

/** Glob patterns from a setting: one per line or comma-separated (not a comma inside braces: `*.{jpg,png}`), blanks dropped. */
export function patternList(text: unknown): string[] {
  if (Array.isArray(text)) return text.map(String).map(p => p.trim()).filter(Boolean);
  if (typeof text !== 'string') return [];
  const patterns: string[] = [];
  let depth = 0;
  let current = '';
  for (const c of text) {
    if (c === '\n' || (c === ',' && depth === 0)) { patterns.push(current); current = ''; depth = 0; continue; }
    if (c === '{') depth++;
    else if (c === '}' && depth > 0) depth--;
    current += c;
  }
  patterns.push(current);
  return patterns.map(p => p.trim()).filter(Boolean);
}

function matcher(patterns: readonly string[]): PathTest {
  if (patterns.length === 0) return () => false;
  return picomatch(patterns as string[], { dot: true, basename: true, nocase: false });
}

export class FileFilter {
  private readonly ignoredName = matcher(IGNORED_BY_DEFAULT);
  private readonly included: PathTest;
  private readonly excluded: PathTest;
  private readonly anyInclude: boolean;

  constructor(include: readonly string[], exclude: readonly string[]) {
    this.anyInclude = include.length > 0;
    this.included = matcher(include);
    this.excluded = matcher(exclude);
  }

  /** A folder (or file) name skipped with everything below it: hidden and temporary names. */
  ignoresName(name: string): boolean {
    return this.ignoredName(name);
  }

  /** True when the file at `relativePath` (with `/` separators) is taken. */
  takes(relativePath: string): boolean {
    if (relativePath.split('/').some(segment => this.ignoredName(segment))) return false;
    if (this.anyInclude && !this.included(relativePath)) return false;
    return !this.excluded(relativePath);
  }
}
