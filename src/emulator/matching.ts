/**
 * Which subscriptions a repository change concerns (spec 4.1 rules 8 to 11, section 6.1).
 *
 * The spec leaves the `+` and `-` watchPath prefixes "not shown"; the meanings chosen here are
 * written down in docs/emulator-subscriptions.md. Paths are compared segment by segment, so
 * `/inbox` never matches `/inbox2/x`.
 */
import type { AssetChange } from './feed-types';

/** `tree`: the path and everything under it; `children`: the path and its direct children; `exclude`: never the path or anything under it. */
export type PathRuleKind = 'tree' | 'children' | 'exclude';

export interface PathRule {
  kind: PathRuleKind;
  /** Path segments; [] is the root `/`. */
  segments: string[];
}

/** One watchMetadata condition; `'*'` is a wildcard key or value. */
export interface MetadataCondition {
  key: string;
  value: string;
}

export interface Matcher {
  includes: PathRule[];
  excludes: PathRule[];
  conditions: MetadataCondition[];
  operand: 'AND' | 'OR';
}

type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** Splits an absolute path into segments, tolerating repeated and trailing slashes. */
function pathSegments(path: string): string[] {
  return path.split('/').filter(s => s !== '');
}

/** Parses one watchPath value: `* /dir`, `+ /dir`, `- /dir`, or a bare absolute path. */
export function parseWatchPath(raw: string): Parsed<PathRule> {
  const prefixed = /^([*+-]) (.*)$/s.exec(raw);
  const kind: PathRuleKind = !prefixed ? 'tree' : prefixed[1] === '+' ? 'children' : prefixed[1] === '-' ? 'exclude' : 'tree';
  const path = prefixed ? prefixed[2] : raw;
  const rule = 'must be a path starting with "/", optionally after one of the prefixes "* ", "+ " or "- "';
  if (!path.startsWith('/')) return { ok: false, error: `watchPath "${raw}" ${rule}` };
  if (/[\u0000-\u001f\u007f]/.test(path)) return { ok: false, error: `watchPath "${raw}" must not contain control characters` };
  const segments = pathSegments(path);
  if (segments.some(s => s === '.' || s === '..')) return { ok: false, error: `watchPath "${raw}" must not contain "." or ".." segments` };
  return { ok: true, value: { kind, segments } };
}

/**
 * Parses one watchMetadata value: `Key=Value` and `Key==Value` (both: the key was set to that value),
 * `Key=*` / `Key==*` (the key was set to anything), `*==*` / `*=*` (any metadata change).
 */
export function parseWatchMetadata(raw: string): Parsed<MetadataCondition> {
  const eq = raw.indexOf('=');
  const rule = 'must be written Key=Value, Key==Value, Key==*, Key=* or *==*';
  if (eq < 0) return { ok: false, error: `watchMetadata "${raw}" ${rule}` };
  const key = raw.slice(0, eq).trim();
  const value = raw.slice(raw.startsWith('=', eq + 1) ? eq + 2 : eq + 1);
  if (key === '') return { ok: false, error: `watchMetadata "${raw}" ${rule} (the key is empty)` };
  return { ok: true, value: { key, value } };
}

/** True when `path` is the rule's path or below it (tree/exclude) or a direct child of it (children). */
export function pathRuleMatches(rule: PathRule, path: string): boolean {
  const target = pathSegments(path);
  const base = rule.segments;
  if (target.length < base.length) return false;
  for (let i = 0; i < base.length; i++) if (target[i] !== base[i]) return false;
  return rule.kind === 'children' ? target.length <= base.length + 1 : true;
}

/** Builds a matcher from already-parsed rules; no include rule means the whole repository. */
export function buildMatcher(pathRules: PathRule[], conditions: MetadataCondition[], operand: 'AND' | 'OR'): Matcher {
  const includes = pathRules.filter(r => r.kind !== 'exclude');
  return {
    includes: includes.length > 0 ? includes : [{ kind: 'tree', segments: [] }],
    excludes: pathRules.filter(r => r.kind === 'exclude'),
    conditions,
    operand
  };
}

/** In scope: under some include rule (OR, spec rule 10) and under no exclude rule (excludes win). */
export function pathInScope(matcher: Matcher, path: string): boolean {
  return matcher.includes.some(r => pathRuleMatches(r, path)) && !matcher.excludes.some(r => pathRuleMatches(r, path));
}

function conditionMatches(c: MetadataCondition, change: AssetChange): boolean {
  const keys = c.key === '*' ? change.changedMetadataKeys : change.changedMetadataKeys.filter(k => k === c.key);
  return keys.some(k => c.value === '*' || change.metadata[k] === c.value);
}

/**
 * Does this change concern the subscription? Without watchMetadata: any change in scope.
 * With watchMetadata: only a change that set metadata, in scope, whose conditions hold per operand.
 */
export function changeMatches(matcher: Matcher, change: AssetChange): boolean {
  if (!pathInScope(matcher, change.path)) return false;
  if (matcher.conditions.length === 0) return true;
  if (change.changedMetadataKeys.length === 0) return false;
  return matcher.operand === 'AND'
    ? matcher.conditions.every(c => conditionMatches(c, change))
    : matcher.conditions.some(c => conditionMatches(c, change));
}
