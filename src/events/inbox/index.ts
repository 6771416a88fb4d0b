/** The at-least-once inbox: the interface and its embedded journal implementation. */
export * from './types';
export { JournalInbox, type JournalInboxLoad } from './journal-inbox';
export { parseJournal, encodeRecord, readJournalSync } from './journal-file';
export { RedisStreamInbox, StreamUnavailableError, type StreamInboxOptions, type StreamRedis } from './redis-stream-inbox';
