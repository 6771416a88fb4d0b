/**
 * Where a field comes from: {@link resolveField} + `as*` converters read one request field from
 * where the editor's TypedInput points (str, num, bool, json, msg, flow, global, env, jsonata,
 * ...). A msg property never replaces a value set on the node; it comes in only when the
 * TypedInput points at it (`msg.fuid`), or when the field is blank and names a `blankReads`
 * property (flows saved before the TypedInputs pointed at msg). Type errors are `invalid-input`
 * AssetApiErrors naming the field. Also the editor settings' rules (blank, number) and paths.
 */
import * as path from 'path';
import { AssetApiError, invalidInput } from '../../api/errors';
import { exactInteger, isIntegerText, readFlag } from '../../api/values';
import type { Node, NodeAPI, NodeMessage } from './node-red';

// ---------------------------------------------------------------- fields

/** Where one request field comes from. */
export interface FieldSource {
  /** Field name used in error messages, e.g. `destination`. */
  field: string;
  /** TypedInput value from the editor. */
  value?: unknown;
  /** TypedInput type from the editor (`str`, `num`, `msg`, `env`, ...). Default `str`. */
  type?: string;
  /**
   * msg property read only when the editor field is blank: flows saved before new nodes showed
   * `msg.<name>` explicitly left these fields blank and documented the msg property. Leave it
   * out where a stray msg property could do harm (a file to write, an export type, an action).
   */
  blankReads?: string;
  /**
   * The field's label in the editor (`Folder fuid`): errors then name it as the user sees it,
   * with the msg property it reads (`Folder fuid (msg.destinationFuid): must be an integer`).
   */
  label?: string;
}

/** A field's value and a label saying where it came from (`msg.fuid` or `fuid`). */
export interface ResolvedField {
  /** Short name (`msg.fuid` or `fuid`), also msg.assetError.field of an error about it. */
  label: string;
  /** How error messages name the field: the editor label and the msg property, when known. */
  text?: string;
  /** undefined when the field is not set anywhere. */
  value: unknown;
}

/** Types whose value names where it is read: errors say so (`msg.fuid`, `flow.lastFuid`, `env.DAM_FOLDER`). */
const READ_FROM = new Set(['msg', 'flow', 'global', 'env']);

/** Types whose empty editor value means "not set". */
const EMPTY_MEANS_UNSET = new Set(['str', 'num', 'bool', 'json', 'msg', 'flow', 'global', 'env', 'jsonata', 're', 'bin']);

/** Evaluates a TypedInput value (async, so flow/global context stores and jsonata work). */
export function evaluateProperty(RED: NodeAPI, node: Node, msg: NodeMessage, value: unknown, type: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    try {
      // Node-RED evaluates any value (typed `string` in @types/node-red: a json or num field arrives as stored).
      RED.util.evaluateNodeProperty(value as string, type, node, msg, (err, result) => err ? reject(err) : resolve(result));
    } catch (err) {
      reject(err);
    }
  });
}

/** True when the editor left the field blank (nothing to evaluate). */
export function isBlank(source: FieldSource): boolean {
  return source.value === undefined || source.value === null ||
    (source.value === '' && EMPTY_MEANS_UNSET.has(source.type || 'str'));
}

/**
 * Resolves one field from where the editor's TypedInput points. A blank field reads
 * `msg[blankReads]` when that is given, else it is unset. A msg property never wins over a
 * value set on the node. An evaluation failure (bad JSON, bad JSONata) becomes an
 * invalid-input error naming the field.
 */
export async function resolveField(RED: NodeAPI, node: Node, msg: NodeMessage, source: FieldSource): Promise<ResolvedField> {
  const type = source.type || 'str';
  /** The editor label, with where the value was read (`Asset fuid (flow.lastFuid)`). */
  const text = (from?: string) => source.label === undefined ? undefined
    : from ? `${source.label} (${from})` : source.label;
  if (isBlank(source)) {
    const fallback = source.blankReads;
    if (fallback && msg[fallback] !== undefined && msg[fallback] !== null) {
      return { label: `msg.${fallback}`, text: text(`msg.${fallback}`), value: msg[fallback] };
    }
    return { label: source.field, text: text(fallback && `msg.${fallback}`), value: undefined };
  }
  const label = type === 'msg' ? `msg.${String(source.value)}` : source.field;
  const named = text(READ_FROM.has(type) ? `${type}.${String(source.value).replace(/^#:\((\S+?)\)::/, '')}` : undefined);
  try {
    const value = await evaluateProperty(RED, node, msg, source.value, type);
    return { label, text: named, value: value === null ? undefined : value };
  } catch (err) {
    throw fieldError({ label: source.field, text: named }, `could not evaluate the ${type} value: ${(err as Error).message}`);
  }
}

/**
 * An invalid-input error about a field: the message names it as the editor does
 * (`Folder fuid (msg.destinationFuid): is required`), msg.assetError.field keeps the short name.
 */
export function fieldError(field: { label: string; text?: string }, rule: string): AssetApiError {
  if (field.text === undefined) return invalidInput(field.label, rule);
  return new AssetApiError('invalid-input', `${field.text}: ${rule}`, { field: field.label });
}

/**
 * An error about an option of the client (`path: cannot create …`) named by the editor label the
 * user sees (`File: cannot create …`); msg.assetError.field keeps the option's name. Changes
 * `err` when `labels` has its field and its message starts with it; returns it.
 */
export function labelled<T>(err: T, labels: Record<string, string> | undefined): T {
  if (!(err instanceof AssetApiError) || err.field === undefined || !labels || !(err.field in labels)) return err;
  const own = `${err.field}: `;
  if (err.message.startsWith(own)) err.message = `${labels[err.field]}: ${err.message.slice(own.length)}`;
  return err;
}

/** Throws an invalid-input error when a required field is not set. */
export function required<T>(field: ResolvedField, value: T | undefined): T {
  if (value === undefined) throw fieldError(field, 'is required');
  return value;
}

/** A string, or undefined when unset or empty. Numbers are accepted and turned into text. */
export function asString(field: ResolvedField): string | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  throw fieldError(field, `must be a string, got ${describe(v)}`);
}

/** An integer (number or decimal text), or undefined when unset or empty. */
export function asInteger(field: ResolvedField): number | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (isIntegerText(v)) {
    const n = exactInteger(v);
    if (typeof n === 'number') return n;
  }
  throw fieldError(field, `must be an integer, got ${describe(v)}`);
}

/** A finite number (number or decimal text, fractions allowed), or undefined when unset or empty. */
export function asNumber(field: ResolvedField): number | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^\s*-?(\d+\.?\d*|\.\d+)\s*$/.test(v)) return Number(v);
  throw fieldError(field, `must be a number, got ${describe(v)}`);
}

/**
 * An integer id such as a fuid or an rrn. Kept as text when it exceeds 2^53, so a
 * 64-bit revision number is never rounded (public-facts.md: never do arithmetic on rrn).
 */
export function asIntegerId(field: ResolvedField): number | string | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'bigint') return v.toString();
  if (isIntegerText(v)) return exactInteger(v);
  throw fieldError(field, `must be an integer, got ${describe(v)}`);
}

/**
 * The name of the environment variable a deployed node's value still names as `${NAME}` (or the
 * older `$(NAME)`): Node-RED replaces it at deploy when the variable is set and leaves the text
 * as it is when not, which would then go out as the value itself (a cookie, a secret).
 */
export function unsetEnvVar(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^\$(?:\{(\S+)\}|\((\S+)\))$/.exec(value); // Node-RED's own patterns: nothing around it
  return m ? m[1] ?? m[2] : undefined;
}

/** The rule for a value naming an unset environment variable, after "field: ". */
export function unsetEnvVarRule(name: string): string {
  return `reads the environment variable ${name}, which is not set where Node-RED runs: start Node-RED with it, or type the value`;
}

/** A bad editor setting; the message names the setting and the rule ("dedupMax: must be ..."). */
export class SettingError extends Error {}

/**
 * True for an editor setting left blank: unset, empty or only spaces; its default then applies.
 * The editor's copy is DamEditor.isBlankSetting (test/api/editor-rules.test.js compares them).
 */
export function isBlankSetting(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/**
 * A number setting from the editor: blank (see {@link isBlankSetting}) is `fallback`; anything
 * else must be a finite number that passes `check`. Editor copy: DamEditor.numberSetting.
 * @throws SettingError "field: rule"
 */
export function numberSetting(value: unknown, field: string, fallback: number, check: (n: number) => boolean, rule: string): number {
  if (isBlankSetting(value)) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || !check(n)) throw new SettingError(`${field}: ${rule}`);
  return n;
}

/** A boolean (true/false or the text "true"/"false"), or undefined when unset or empty. */
export function asBoolean(field: ResolvedField): boolean | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  const flag = readFlag(v);
  if (flag !== undefined) return flag;
  throw fieldError(field, `must be true or false, got ${describe(v)}`);
}

/**
 * Resolves a file path like the core file nodes: relative to `fileWorkingDirectory` or the cwd.
 * A trailing separator is kept (it means "into this folder" to the download).
 */
export function resolvePath(RED: NodeAPI, file: string): string {
  const { fileWorkingDirectory } = RED.settings as { fileWorkingDirectory?: string }; // a core setting @types/node-red lacks
  const resolved = path.resolve(fileWorkingDirectory || process.cwd(), file);
  return /[\\/]$/.test(file) && !resolved.endsWith(path.sep) ? resolved + path.sep : resolved;
}

/** Short description of a wrong value for an error message (never the whole value). */
function describe(v: unknown): string {
  if (typeof v === 'string') return `"${v.length > 30 ? v.slice(0, 30) + '…' : v}"`;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Buffer.isBuffer(v)) return 'a Buffer';
  if (Array.isArray(v)) return 'an array';
  return v === null ? 'null' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

