'use strict';
// Big test files: written with a stream (never whole in memory), content that does not compress.
const fs = require('fs');
const crypto = require('crypto');
const { once } = require('events');
const { MiB, formatSize } = require('./util');

/**
 * Writes `size` bytes of pseudo-random data to `file` and returns its sha256.
 * Each 1 MiB block is fresh random bytes, so nothing along the way can compress or dedupe it.
 */
async function makeFile(file, size) {
  const out = fs.createWriteStream(file);
  const hash = crypto.createHash('sha256');
  let left = size;
  try {
    while (left > 0) {
      const block = crypto.randomBytes(Math.min(MiB, left));
      hash.update(block);
      left -= block.length;
      if (!out.write(block)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
  } catch (err) {
    out.destroy();
    throw err;
  }
  return hash.digest('hex');
}

/** Bytes free for this user in the file system holding `dir`. */
function freeBytes(dir) {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

/** Throws a clear error when `dir` has less than `needed` bytes free. */
function checkDiskSpace(dir, needed) {
  const free = freeBytes(dir);
  if (free < needed) {
    throw new Error(`not enough disk space in ${dir}: the chosen sizes need about ${formatSize(needed)}, ` +
      `${formatSize(free)} is free. Free some space or pass smaller sizes (--sizes 16M,256M).`);
  }
  return free;
}

module.exports = { makeFile, freeBytes, checkDiskSpace };
