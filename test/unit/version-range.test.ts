import assert from 'node:assert/strict';
import { satisfies } from '../../core/plugins/version-range.ts';

/** The host version ranges plugins declare (`kubeletTs`), with npm's meaning. */
describe('plugin host version ranges', function () {
  const cases: Array<[version: string, range: string, fits: boolean]> = [
    ['0.1.0', '^0.x', true], ['1.0.0', '^0.x', false], ['0.1.0', '^0.1', true], ['0.2.0', '^0.1', false],
    ['0.1.5', '^0.1.3', true], ['0.1.2', '^0.1.3', false], ['0.0.3', '^0.0.3', true], ['0.0.4', '^0.0.3', false],
    ['1.9.9', '^1.2', true], ['2.0.0', '^1.2', false], ['0.1.0', '~0.1.0', true], ['0.2.0', '~0.1', false],
    ['0.1.0', '>=0.1.0 <1', true], ['1.0.0', '>=0.1.0 <1', false], ['0.1.0', '*', true], ['0.1.0', '0.x', true],
    ['0.1.0', '1.x || 0.1', true], ['0.1.0', '0.0.1 - 0.1', true], ['0.2.0', '0.0.1 - 0.1', false],
    ['0.1.0', '>0.0', true], ['0.1.0', '0.1.0', true], ['0.1.1', '=0.1.0', false],
  ];
  for (const [version, range, fits] of cases) {
    it(`${version} ${fits ? 'is' : 'is not'} in ${range}`, function () {
      assert.equal(satisfies(version, range), fits);
    });
  }
  it('refuses a range that does not parse, saying what one looks like', function () {
    assert.throws(() => satisfies('0.1.0', 'banana'), /"banana" is not a version range \(e\.g\. '\^0\.1', '>=0\.1\.0 <1'\)/);
  });
});
