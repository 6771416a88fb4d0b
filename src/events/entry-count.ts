/**
 * The cap on entries per callback (asset-event-in's "Max entries" setting), checked on the JSON
 * text before it is parsed: JSON.parse of 6 million tiny entries (48 MB, under the default body
 * limit) takes about 240 MB of heap, enough to take down a Node-RED with a small heap.
 */
import { scanJsonText, type ScanLimits, type TextScan } from './text-scan';

/** The reason a callback with too many entries is refused with (413): names the setting. */
export function tooManyEntries(max: number): string {
  return `data.entry: more than ${max} entries in one callback (setting Max entries, maxEntries)`;
}

/**
 * Arrays and objects a callback may hold anywhere, per entry of the cap: an entry with its
 * metadata has a few; a body of millions of `[]` under any key (16 million in 48 MB) would take
 * more heap to parse than a small Node-RED has. 20 per entry, 100,000 at least (a small Max
 * entries must not refuse rich entries): 2 million at the default cap, about 90 MB of heap for
 * empty ones.
 */
export const CONTAINERS_PER_ENTRY = 20;
const MIN_CONTAINERS = 100000;

/** Most arrays and objects in one callback for a Max entries of `maxEntries`. */
export function containerCap(maxEntries: number): number {
  return Math.max(MIN_CONTAINERS, maxEntries * CONTAINERS_PER_ENTRY);
}

/** The reason a callback with too many arrays and objects is refused with (413). */
export function tooManyContainers(maxEntries: number): string {
  return `body: more than ${containerCap(maxEntries)} arrays and objects (${CONTAINERS_PER_ENTRY} per entry of the setting Max entries, maxEntries)`;
}

/**
 * Values (numbers, strings, literals, arrays, objects) a callback may hold anywhere, per entry of
 * the cap: a plain array of 14 million numbers and empty strings fits in a 49 MB body and takes
 * about 280 MB of heap to parse; the caps on entries and on arrays and objects do not see it. 30
 * per entry (an entry with two dozen metadata fields), 1,000,000 at least: 3 million at the
 * default cap, about 50 MB of heap at most.
 */
export const VALUES_PER_ENTRY = 30;
const MIN_VALUES = 1000000;

/** Most values in one callback for a Max entries of `maxEntries`. */
export function valueCap(maxEntries: number): number {
  return Math.max(MIN_VALUES, maxEntries * VALUES_PER_ENTRY);
}

/** The reason a callback with too many values is refused with (413). */
export function tooManyValues(maxEntries: number): string {
  return `body: more than ${valueCap(maxEntries)} values (${VALUES_PER_ENTRY} per entry of the setting Max entries, maxEntries)`;
}

/** The caps of a Max entries of `maxEntries` as scan limits (none for Infinity). */
export function entryLimits(maxEntries: number, maxDepth = Infinity): ScanLimits {
  const capped = maxEntries !== Infinity;
  return { maxDepth, maxEntries, maxContainers: capped ? containerCap(maxEntries) : Infinity, maxValues: capped ? valueCap(maxEntries) : Infinity };
}

/** The reason (413) for the cap a scan found passed, for a Max entries of `maxEntries`; undefined when none. */
export function capReason(scan: TextScan, maxEntries: number): string | undefined {
  if (scan.overCap === 'containers') return tooManyContainers(maxEntries);
  if (scan.overCap === 'values') return tooManyValues(maxEntries);
  return undefined;
}

/**
 * The reason (413) a callback's JSON text holds more arrays and objects than containerCap, or more
 * values than valueCap, for a Max entries of `maxEntries`; undefined when it holds no more
 * (scanJsonText, text-scan.ts: the first cap passed in text order).
 */
export function overValueCaps(text: string, maxEntries: number): string | undefined {
  return capReason(scanJsonText(text, entryLimits(maxEntries)), maxEntries);
}

/**
 * How many entries (values in the array `data.entry`, or a lone object there) the JSON text of a callback
 * body holds, counting no further than `limit + 1` (scanJsonText). A repeated key (`"data"` twice)
 * counts both: an upper bound, as JSON.parse keeps only the last.
 */
export function entriesInText(text: string, limit: number): number {
  return scanJsonText(text, { maxDepth: Infinity, maxEntries: limit, maxContainers: Infinity, maxValues: Infinity }).entries;
}
