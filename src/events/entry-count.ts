/**
 * The cap on entries per callback (asset-event-in's "Max entries" setting), checked on the JSON
 * text before it is parsed: JSON.parse of 6 million tiny entries (48 MB, under the default body
 * limit) takes about 240 MB of heap, enough to take down a Node-RED with a small heap.
 */

/** The reason a callback with too many entries is refused with (413): names the setting. */
export function tooManyEntries(max: number): string {
  return `data.entry: more than ${max} entries in one callback (setting Max entries, maxEntries)`;
}

const SPACE = 0x20, TAB = 0x09, LF = 0x0a, CR = 0x0d;
const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d, OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d, COMMA = 0x2c;

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

/**
 * The reason (413) a callback's JSON text holds more arrays and objects than containerCap, or more
 * values than valueCap, for a Max entries of `maxEntries`; undefined when it holds no more. One pass,
 * outside strings, stopping at the first cap passed: each `[` or `{` is a container, each container
 * and each comma a value (an upper bound: an object's key and value count once, as JSON.parse keeps
 * repeated keys in one table).
 */
export function overValueCaps(text: string, maxEntries: number): string | undefined {
  const maxContainers = containerCap(maxEntries);
  const maxValues = valueCap(maxEntries);
  let containers = 0;
  let values = 0;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < n; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++containers > maxContainers) return tooManyContainers(maxEntries);
      if (++values > maxValues) return tooManyValues(maxEntries);
    } else if (c === COMMA && ++values > maxValues) {
      return tooManyValues(maxEntries);
    }
  }
  return undefined;
}

/**
 * How many entries (values in the array `data.entry`, or a lone object there) the JSON text of a callback
 * body holds, counting no further than `limit + 1`. Keys are read (escapes decoded) only as deep
 * as `data.entry`; everything deeper is only walked. A repeated key (`"data"` twice) counts both:
 * an upper bound, as JSON.parse keeps only the last.
 */
export function entriesInText(text: string, limit: number): number {
  let count = 0;
  let depth = 0;
  let expectKey = false;
  // For depths 1 to 3: is the container an object, under which key it sits, its last key read.
  const isObject: boolean[] = [];
  const nameOf: Array<string | undefined> = [];
  const lastKey: Array<string | undefined> = [];
  // Inside the array data.entry, after its `[` or a `,`: the next value is an entry, whatever its
  // type (an array or a number costs the parser memory as an object does).
  let entryExpected = false;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (entryExpected && c !== SPACE && c !== TAB && c !== LF && c !== CR) {
      entryExpected = false;
      if (c !== CLOSE_ARRAY && ++count > limit) return count;
    }
    if (c === QUOTE) {
      const start = i;
      let escaped = false;
      for (i++; i < n; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) { escaped = true; i++; } else if (s === QUOTE) break;
      }
      if (expectKey) {
        expectKey = false;
        if (depth <= 2) lastKey[depth] = readKey(text, start, i, escaped);
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const parent = depth++;
      const object = c === OPEN_OBJECT;
      if (depth <= 3) {
        isObject[depth] = object;
        nameOf[depth] = parent >= 1 && isObject[parent] ? lastKey[parent] : undefined;
        lastKey[depth] = undefined;
      }
      // A lone entry object; the elements of the entry array are counted above.
      if (object && depth === 3 && inEntryList(depth, isObject, nameOf) && ++count > limit) return count;
      if (!object && depth === 3 && isEntryArray(isObject, nameOf)) entryExpected = true;
      expectKey = object;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
      expectKey = false;
    } else if (c === COMMA) {
      // Deeper than 3 no key is read, so whether a key follows does not matter there.
      expectKey = depth >= 1 && depth <= 3 && isObject[depth];
      if (depth === 3 && isEntryArray(isObject, nameOf)) entryExpected = true;
    }
  }
  return count;
}

/** The container at depth 3 is the array `data.entry`. */
function isEntryArray(isObject: boolean[], nameOf: Array<string | undefined>): boolean {
  return !!isObject[1] && !!isObject[2] && nameOf[2] === 'data' && !isObject[3] && nameOf[3] === 'entry';
}

/** An object opened at `depth` is an entry: in the array `data.entry` (depth 4) or alone as `data.entry` (depth 3). */
function inEntryList(depth: number, isObject: boolean[], nameOf: Array<string | undefined>): boolean {
  if (!isObject[1] || !isObject[2] || nameOf[2] !== 'data') return false;
  if (depth === 3) return nameOf[3] === 'entry';
  return depth === 4 && !isObject[3] && nameOf[3] === 'entry';
}

function readKey(text: string, start: number, end: number, escaped: boolean): string | undefined {
  const raw = text.slice(start, end + 1);
  if (!escaped) return raw.slice(1, -1);
  try {
    return JSON.parse(raw) as string;
  } catch {
    return undefined;
  }
}
