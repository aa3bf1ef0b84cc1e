import assert from 'node:assert/strict';
import { inspectorOpensOnSignal } from '../../core/process-lifecycle.ts';

/** When the kubelet's start warns that SIGUSR1 would open Node's inspector (the attack: test/integration/hardening.test.ts). */
describe('the SIGUSR1 inspector check', function () {
  it('is open unless --disable-sigusr1 is among node\'s flags or in NODE_OPTIONS', function () {
    // The official builds have an inspector; one built without it has nothing to open.
    assert.equal(process.features.inspector, true, 'this node has no inspector: the check below would say nothing');
    assert.equal(inspectorOpensOnSignal([], ''), true);
    assert.equal(inspectorOpensOnSignal(['--max-semi-space-size=2'], '--max-old-space-size=100'), true);
    assert.equal(inspectorOpensOnSignal(['--disable-sigusr1', '--max-semi-space-size=2'], ''), false);
    assert.equal(inspectorOpensOnSignal([], '--max-old-space-size=100  --disable-sigusr1'), false);
    // A similar flag is not the flag.
    assert.equal(inspectorOpensOnSignal(['--disable-sigusr1-please'], ''), true);
  });
});
