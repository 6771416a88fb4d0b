/** The at-least-once inbox: the interface and its embedded journal implementation. */
export * from './types';
export { orderKey, isAssetKey, keyText, readKey, type OrderKey } from './keys';
export { JournalInbox, type JournalInboxLoad } from './journal-inbox';
export { parseJournal, encodeRecord, readJournalSync, readJournal } from './journal-file';
export { RedisStreamInbox, StreamUnavailableError, type StreamInboxOptions, type StreamRedis } from './redis-stream-inbox';
