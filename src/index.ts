/** Public entry: the API client (usable outside Node-RED) and the emulator. */
export * from './api/types';
export * from './api/errors';
export * from './api/client';
export { LOGIN_PRESETS, type LoginOptions, type LoginPreset } from './api/session';
export { startEmulator } from './emulator';
export type { EmulatorOptions, EmulatorSession, EmulatorUser, RunningEmulator, SessionStats } from './emulator';
export * from './api/validate';
export { parseJsonKeepingBigInts } from './api/json';
export { sanitizeFilename, filenameFromContentDisposition } from './api/filename';
