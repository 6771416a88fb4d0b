'use strict';
// For investigations: V8's sampling heap profiler in a bench Node-RED from its start, counting
// objects the collector already freed too (what a CPU profile's "(garbage collector)" pays for),
// written to ALLOC_PROFILE when Node-RED is stopped (SIGTERM):
//   ALLOC_PROFILE=/tmp/inbox.heapprofile EXTRA="--require $PWD/bench/lib/alloc-preload.js" node bench/ab-events.js --profile /tmp/p inbox 100
// Read with `node bench/alloc-profile-summary.js /tmp/inbox.heapprofile ENTRIES`. docs/performance.md (Follow-up 6) has results.
const inspector = require('inspector');
const fs = require('fs');

const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.enable');
session.post('HeapProfiler.startSampling', { samplingInterval: 2048, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
process.on('SIGTERM', () => {
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (!err) fs.writeFileSync(process.env.ALLOC_PROFILE || 'alloc.heapprofile', JSON.stringify(result.profile));
  });
});
