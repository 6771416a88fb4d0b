/**
 * Reading the server's answers: headers, content types, and a JSON answer with success true
 * or the error it stands for (error-mapping.ts builds the errors).
 */
import type { AxiosResponse } from 'axios';
import { AssetApiError, type AssetOperation } from './errors';
import {
  type ErrorContext, errorForFailedAnswer, errorForMalformedAnswer, errorForStatus, isFailedAnswer, proxyAuthError, tunnelRefusedError, tryParseJson
} from './error-mapping';
import { proxyOriginOf, refusedTunnelOf } from './proxy';
import { isPlainObject } from './values';

/** A response header as one string (repeated ones joined with ", "), undefined when absent. */
export function headerOf(response: AxiosResponse, name: string): string | undefined {
  const value: unknown = (response.headers as Record<string, unknown>)[name];
  if (value === undefined || value === null) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/** Response headers as plain strings, without Set-Cookie (a new session cookie is a secret too). */
export function plainHeaders(response: AxiosResponse): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers as Record<string, unknown>)) {
    if (name.toLowerCase() === 'set-cookie' || value === undefined || value === null) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}

/**
 * A body sent as a file (with Content-Disposition) is content, never the server's error answer,
 * whatever it holds: a JSON asset may well read {"success":false,...}. Only the error shape
 * without Content-Disposition is an error.
 */
export function sentAsFile(response: AxiosResponse): boolean {
  return headerOf(response, 'content-disposition') !== undefined;
}

export function isJsonType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/([\w.+-]+\+)?json\b/i.test(contentType.trim());
}

/** axios' error for an answer beyond maxContentLength. */
export function isAnswerTooLarge(err: unknown): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === 'ERR_BAD_RESPONSE' && /^maxContentLength size of \d+ exceeded/.test(err.message);
}

/** The error for an answer that is the HTTP proxy's own, not the server's (a CONNECT it refused, 407); else undefined. */
export function proxyAnswerError(ctx: ErrorContext, response: AxiosResponse): AssetApiError | undefined {
  if (response.status === 407) return proxyAuthError(ctx.operation);
  const proxy = refusedTunnelOf(response.request);
  return proxy === undefined ? undefined : tunnelRefusedError(ctx, response.status, proxy);
}

/** For a request outside the JSON calls (the login): an answer the proxy gave is never taken for the server's. */
export function throwIfFromProxy(operation: AssetOperation, origin: string, response: AxiosResponse): void {
  const fromProxy = proxyAnswerError({ operation, origin, redact: (text) => text }, response); // the proxy's words hold no secret of ours
  if (fromProxy) throw fromProxy;
}

/** The error for a status other than 2xx, with the server's message when its body says one. */
export function statusError(ctx: ErrorContext, status: number, text: string, response: AxiosResponse): AssetApiError {
  const fromProxy = proxyAnswerError(ctx, response);
  if (fromProxy) return fromProxy;
  const err = errorForStatus(ctx, status, tryParseJson(text)?.value, headerOf(response, 'location'), headerOf(response, 'retry-after'));
  // A proxy that cannot reach a plain-HTTP server answers so itself (squid: 503 for a wrong host
  // name); through a CONNECT tunnel (https) that is a refused tunnel, above.
  const proxy = proxyOriginOf(response.request);
  if (proxy === undefined || !ctx.origin.startsWith('http:') || (status !== 502 && status !== 503 && status !== 504)) return err;
  return new AssetApiError(err.kind, `${err.message} This answer came through the HTTP proxy ${proxy}: it may be the proxy's own, when it cannot reach ${ctx.origin} (check the base URL's host, and the proxy).`, err);
}

/** A JSON answer with success true, or the error it stands for. */
export function readJsonAnswer(ctx: ErrorContext, response: AxiosResponse): Record<string, unknown> {
  const text = String(response.data ?? '');
  if (response.status < 200 || response.status >= 300) throw statusError(ctx, response.status, text, response);
  const parsed = tryParseJson(text);
  if (!parsed || !isPlainObject(parsed.value)) {
    throw errorForMalformedAnswer(ctx, response.status, headerOf(response, 'content-type'));
  }
  if (isFailedAnswer(parsed.value)) throw errorForFailedAnswer(ctx, response.status, parsed.value);
  return parsed.value;
}

/**
 * An export answer (spec 4.4): parsed JSON when the server sent JSON, else the text; a JSON
 * answer saying success false (not sent as a file) is the error it stands for.
 */
export function readExportAnswer(ctx: ErrorContext, response: AxiosResponse): { data: unknown; contentType?: string } {
  const contentType = headerOf(response, 'content-type');
  const text = String(response.data ?? '');
  if (response.status < 200 || response.status >= 300) throw statusError(ctx, response.status, text, response);
  const parsed = isJsonType(contentType) || /^\s*\{/.test(text) ? tryParseJson(text) : undefined;
  if (isJsonType(contentType) && parsed === undefined) throw errorForMalformedAnswer(ctx, response.status, contentType);
  if (parsed && !sentAsFile(response) && isFailedAnswer(parsed.value)) throw errorForFailedAnswer(ctx, response.status, parsed.value);
  return { data: isJsonType(contentType) && parsed ? parsed.value : text, contentType };
}
