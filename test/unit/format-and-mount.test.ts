import assert from 'node:assert/strict';
import { formatAndMount } from '../../core/volumes/format-and-mount.ts';

describe('formatAndMount (local PVs on a block device)', function () {
  it('refuses an fsType that is not a plain type name before running anything (it names the mkfs program)', async function () {
    for (const fsType of ['../../tmp/x', 'ext4;rm', 'EXT4 ', 'x/y', '']) {
      await assert.rejects(formatAndMount('/dev/null-not-a-device', '/nonexistent', fsType, false), /is not a file system type name/, fsType);
    }
  });
});
