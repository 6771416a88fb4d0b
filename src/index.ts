/** Public entry: the API client (usable outside Node-RED) and the emulator. */
export * from './api/types';
export * from './api/errors';
export * from './api/client';
export { startEmulator } from './emulator';
export type { EmulatorOptions, EmulatorSession, RunningEmulator } from './emulator';
export * from './api/validate';
export { parseJsonKeepingBigInts } from './api/json';
export { sanitizeFilename, filenameFromContentDisposition } from './api/filename';
