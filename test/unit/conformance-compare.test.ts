import assert from 'node:assert/strict';
import { compareResults, formatComparison, parseResults } from '../../tools/conformance/compare.ts';

const REF = 'PASS [sig-node] a [Conformance]\nPASS [sig-node] b [Conformance]\nFAIL [sig-node] env [Conformance]\nPASS [sig-storage] c [Conformance]\n';

describe('conformance: comparing a run with upstream\'s kubelet on the same harness', () => {
  it('names what passes upstream and fails here; the environment\'s failures apart; exit-worthy only the former', () => {
    const c = compareResults(parseResults(REF, 'ref'), parseResults('PASS [sig-node] a [Conformance]\nFAIL [sig-node] b [Conformance]\nFAIL [sig-node] env [Conformance]\nPASS [sig-storage] c [Conformance]\n', 'here'), false);
    assert.deepEqual([c.passed.length, c.failed.length, c.regressions, c.environmental, c.missing], [2, 2, ['[sig-node] b [Conformance]'], ['[sig-node] env [Conformance]'], []]);
    const text = formatComparison(c, { '[sig-node] b [Conformance]': { message: 'expected pod "x" success: Timed out\nmore', location: 'output.go:247' } });
    assert.match(text, /^2 passed, 2 failed of 4 selected \(upstream's kubelet on this harness: 3 passed, 1 failed\)\n/);
    assert.match(text, /pass with upstream's kubelet, fail here: 1\n  \[sig-node\] b \[Conformance\]\n      expected pod "x" success: Timed out \/ more \(output\.go:247\)\n/);
  });

  it('a whole run that lacks a test upstream passes says so; a focused run does not', () => {
    const here = parseResults('PASS [sig-node] a [Conformance]\n', 'here');
    assert.deepEqual(compareResults(parseResults(REF, 'ref'), here, false).missing, ['[sig-node] b [Conformance]', '[sig-storage] c [Conformance]']);
    assert.deepEqual(compareResults(parseResults(REF, 'ref'), here, true).missing, []);
  });

  it('refuses a results file of another shape, naming the file and line', () => {
    assert.throws(() => parseResults('PASS x\nok y\n', 'r.txt'), /r\.txt:2: not a result line/);
  });
});
