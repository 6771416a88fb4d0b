/** Receiving asset-change callbacks: payload parsing, body reading, secret check, duplicate filter. */
export * from './payload';
export * from './body';
export * from './body-slots';
export * from './secret';
export * from './dedup';
export * from './entry-filter';
export * from './redis-dedup';
export * from './entry-digest';
export * from './entry-count';
