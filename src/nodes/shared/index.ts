/**
 * The nodes' shared code, by job (nothing here knows a node type):
 * texts.ts (catalogue texts, status, errors as short text), fields.ts (field sources, settings),
 * request-tracker.ts (requests in flight), input.ts (input and close), event-in-stats.ts and
 * masking.ts (needed by the nodes and the sidebar plugin), flows.ts (the deployed flows' nodes),
 * node-red.ts (Node-RED's types).
 */
export * from './texts';
export * from './fields';
export * from './request-tracker';
export * from './input';
export type * from './node-red';
