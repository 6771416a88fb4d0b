/**
 * JSON parsing that keeps 64-bit integers exact.
 *
 * The server's rrn is a Java long and may exceed 2^53 (public-facts.md). JSON.parse
 * would round it silently (and Node 20 gives a reviver no access to the source text),
 * so integer literals outside the safe range are quoted before parsing and arrive as
 * strings. Everything else parses exactly as JSON.parse does. Used by the client for
 * responses and by src/events for callback bodies.
 */

/** Fast check: only a run of 16+ digits can be an unsafe integer. */
const LONG_DIGIT_RUN = /\d{16}/;

/**
 * Parses JSON text; integers beyond Number.MAX_SAFE_INTEGER (either sign) become
 * decimal strings. Throws SyntaxError as JSON.parse does.
 */
export function parseJsonKeepingBigInts(text: string): unknown {
  return JSON.parse(withExactIntegers(text));
}

/** `text` with integers beyond Number.MAX_SAFE_INTEGER quoted: JSON.parse then keeps them exact (the same text when it has none). */
export function withExactIntegers(text: string): string {
  return LONG_DIGIT_RUN.test(text) ? quoteUnsafeIntegers(text) : text;
}

/**
 * Returns `text` with every integer literal that is outside the safe range (and not
 * inside a string) wrapped in quotes. Numbers with a fraction or an exponent are left
 * alone: they are not revision numbers.
 */
export function quoteUnsafeIntegers(text: string): string {
  let out = '';
  let copiedUpTo = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // Skip a string literal, honouring backslash escapes.
      i++;
      while (i < n) {
        const s = text.charCodeAt(i);
        if (s === 0x5c /* \ */) i += 2;
        else if (s === 0x22) { i++; break; }
        else i++;
      }
      continue;
    }
    if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      // Outside strings, a digit or minus can only start a number.
      const start = i++;
      while (i < n && isNumberChar(text.charCodeAt(i))) i++;
      const literal = text.slice(start, i);
      if (/^-?\d{16,}$/.test(literal) && !Number.isSafeInteger(Number(literal))) {
        out += text.slice(copiedUpTo, start) + '"' + literal + '"';
        copiedUpTo = i;
      }
      continue;
    }
    i++;
  }
  return copiedUpTo === 0 ? text : out + text.slice(copiedUpTo);
}

function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e /* . */ || c === 0x65 /* e */ || c === 0x45 /* E */
    || c === 0x2b /* + */ || c === 0x2d /* - */;
}
