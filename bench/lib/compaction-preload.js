'use strict';
// For investigations: each compaction's snapshot (journal-records.ts snapshotText), timed on the
// main thread, one JSON line per compaction in COMPACTION_LOG (hrtime µs, ms, newest revisions, characters):
//   COMPACTION_LOG=/tmp/compactions.log BENCH_NODE_RED_ARGS="--require $PWD/bench/lib/compaction-preload.js" npm run bench -- --only events --variants node,inbox
// docs/performance.md (Follow-ups 4 and 5) has results.
const fs = require('fs');
const path = require('path');

const out = process.env.COMPACTION_LOG || path.join(require('os').tmpdir(), 'compactions.log');
const records = require(path.join(__dirname, '..', '..', 'dist', 'events', 'inbox', 'journal-records'));
const snapshotText = records.snapshotText;
records.snapshotText = (state) => {
  const start = process.hrtime.bigint();
  const text = snapshotText(state);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  fs.appendFileSync(out, JSON.stringify({ at: Number(start / 1000n), ms, revisions: state.newest.size, chars: text.length }) + '\n');
  return text;
};
