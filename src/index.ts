/** Public entry: the API client (usable outside Node-RED) and the emulator. */
export * from './api/types';
export * from './api/errors';
export * from './api/client';
export { startEmulator } from './emulator';
export type { EmulatorOptions, EmulatorSession, RunningEmulator } from './emulator';
