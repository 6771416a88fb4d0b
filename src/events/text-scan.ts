/**
 * One pass over a callback's JSON text before it is parsed, for every check that must come
 * before JSON.parse: the nesting depth (body.ts), the entries of `data.entry` and the caps on
 * arrays, objects and values (entry-count.ts), and whether an integer may need quoting to stay
 * exact (api/json.ts). Each was a pass of its own, plus a regular expression: a CPU profile of
 * Node-RED taking 42 MB callbacks put 0.6 s of each callback's 1.3 s stall in them. Strings,
 * most of a callback's text, are skipped with indexOf rather than read character by character.
 */

const SPACE = 0x20, TAB = 0x09, LF = 0x0a, CR = 0x0d, DIGIT_0 = 0x30, DIGIT_9 = 0x39;
const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d, OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d, COMMA = 0x2c;

/** Limits of one scan; Infinity for a check not wanted. */
export interface ScanLimits {
  maxDepth: number;
  /** Entries are counted up to this + 1. */
  maxEntries: number;
  maxContainers: number;
  maxValues: number;
}

export interface TextScan {
  /** More than maxDepth arrays and objects open at once; the scan stopped there, the other figures are partial. */
  tooDeep: boolean;
  /** Values in the array `data.entry` (or 1 for a lone object there), counted up to maxEntries + 1; a repeated key counts both. */
  entries: number;
  /**
   * The first cap passed in text order, if any: each `[` or `{` is a container, each container and
   * each comma a value (an upper bound: an object's key and value count once).
   */
  overCap?: 'containers' | 'values';
  /** A run of 16 or more digits outside strings: an integer beyond 2^53 may be there (quoteUnsafeIntegers). */
  longDigits: boolean;
}

/** Index of the quote closing the string opened at `open` (a backslash escapes the next character), or text.length. */
function stringEnd(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return text.length;
    let b = at - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--; // stops at the opening quote at the latest
    if ((at - 1 - b) % 2 === 0) return at;
  }
}

/**
 * Scans `text` once. Keys are read (escapes decoded) only as deep as `data.entry`; everything
 * deeper is only walked.
 */
export function scanJsonText(text: string, limits: ScanLimits): TextScan {
  const { maxDepth, maxEntries, maxContainers, maxValues } = limits;
  let entries = 0;
  let containers = 0;
  let values = 0;
  let overCap: TextScan['overCap'];
  let longDigits = false;
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
      if (c !== CLOSE_ARRAY && entries <= maxEntries) entries++;
    }
    if (c === QUOTE) {
      const start = i;
      i = stringEnd(text, i);
      if (expectKey) {
        expectKey = false;
        if (depth <= 2) lastKey[depth] = readKey(text, start, i);
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const parent = depth++;
      if (depth > maxDepth) return { tooDeep: true, entries, overCap, longDigits };
      if (overCap === undefined) {
        if (++containers > maxContainers) overCap = 'containers';
        else if (++values > maxValues) overCap = 'values';
      }
      const object = c === OPEN_OBJECT;
      if (depth <= 3) {
        isObject[depth] = object;
        nameOf[depth] = parent >= 1 && isObject[parent] ? lastKey[parent] : undefined;
        lastKey[depth] = undefined;
      }
      // A lone entry object; the elements of the entry array are counted above.
      if (object && depth === 3 && inEntryList(depth, isObject, nameOf) && entries <= maxEntries) entries++;
      if (!object && depth === 3 && isEntryArray(isObject, nameOf)) entryExpected = true;
      expectKey = object;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
      expectKey = false;
    } else if (c === COMMA) {
      if (overCap === undefined && ++values > maxValues) overCap = 'values';
      // Deeper than 3 no key is read, so whether a key follows does not matter there.
      expectKey = depth >= 1 && depth <= 3 && isObject[depth];
      if (depth === 3 && isEntryArray(isObject, nameOf)) entryExpected = true;
    } else if (c >= DIGIT_0 && c <= DIGIT_9) {
      let j = i + 1;
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d < DIGIT_0 || d > DIGIT_9) break;
        j++;
      }
      if (j - i >= 16) longDigits = true;
      i = j - 1;
    }
  }
  return { tooDeep: false, entries, overCap, longDigits };
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

function readKey(text: string, start: number, end: number): string | undefined {
  const raw = text.slice(start, end + 1);
  if (raw.indexOf('\\') < 0) return raw.slice(1, -1);
  try {
    return JSON.parse(raw) as string;
  } catch {
    return undefined;
  }
}
