// A runtime provider for host tests: fills the slot, is never called.
import { definePlugin } from 'kubelet-ts';
import { unusedRuntime } from '../../support/recorder-plugin.ts';

export default definePlugin({
  name: 'case-stub-runtime',
  kind: 'runtime',
  apply(ctx) {
    ctx.provide('runtime', unusedRuntime());
  },
});
