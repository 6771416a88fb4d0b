/**
 * JSON parsing that keeps 64-bit integers exact.
 *
 * The server's rrn is a Java long and may exceed 2^53 (public-facts.md). JSON.parse
 * would round it silently, so integers outside the safe range are quoted before
 * parsing and arrive as strings. Everything else parses exactly as JSON.parse does.
 */

function isNumberChar(code: number): boolean {
  // 0-9 . e E + -
  return (code >= 48 && code <= 57) || code === 46 || code === 101 || code === 69 || code === 43 || code === 45;
}

/**
 * Parses JSON text; integers beyond Number.MAX_SAFE_INTEGER (either sign) become
 * decimal strings. Throws SyntaxError as JSON.parse does.
 */
export function parseJsonKeepingBigInts(text: string): unknown {
  let pieces: string[] | undefined;
  let copiedUpTo = 0;
  let i = 0;
  const length = text.length;
  while (i < length) {
    const code = text.charCodeAt(i);
    if (code === 34) {
      // Skip a string literal, honouring backslash escapes.
      i++;
      while (i < length) {
        const c = text.charCodeAt(i);
        if (c === 92) i += 2;
        else if (c === 34) { i++; break; } else i++;
      }
      continue;
    }
    if (code === 45 || (code >= 48 && code <= 57)) {
      // Outside strings, a digit or minus can only start a number.
      const start = i++;
      while (i < length && isNumberChar(text.charCodeAt(i))) i++;
      const token = text.slice(start, i);
      const digits = token.charCodeAt(0) === 45 ? token.length - 1 : token.length;
      if (digits >= 16 && /^-?\d+$/.test(token) && !Number.isSafeInteger(Number(token))) {
        (pieces ??= []).push(text.slice(copiedUpTo, start), '"', token, '"');
        copiedUpTo = i;
      }
      continue;
    }
    i++;
  }
  if (!pieces) return JSON.parse(text);
  pieces.push(text.slice(copiedUpTo));
  return JSON.parse(pieces.join(''));
}
