/** Public entry: the API client (usable outside Node-RED) and the emulator. */
import type { EmulatorOptions, RunningEmulator } from './emulator';

export * from './api/types';
export * from './api/errors';
export * from './api/client';
export { LOGIN_PRESETS, type LoginOptions, type LoginPreset } from './api/session';
export type { EmulatorOptions, EmulatorSession, EmulatorUser, RunningEmulator, SessionStats, FormCharset } from './emulator';

/**
 * Starts the emulator (see docs/emulator.md). Its modules, and the parsers they need (busboy,
 * yauzl), are loaded on the first call: a flow that only uses the client never loads them.
 */
export async function startEmulator(options?: EmulatorOptions): Promise<RunningEmulator> {
  const emulator = await import('./emulator');
  return emulator.startEmulator(options);
}
export * from './api/validate';
export { parseJsonKeepingBigInts } from './api/json';
export { sanitizeFilename, filenameFromContentDisposition } from './api/filename';
