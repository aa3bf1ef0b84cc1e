// A plugin given as a directory: the host loads its index.ts.
import { definePlugin, STAGE } from 'kubelet-ts';

export default definePlugin({
  name: 'dir-plugin',
  kind: 'observability',
  apply(ctx) {
    ctx.hooks.podStatusChanged.tap({ name: 'dir-plugin', stage: STAGE.OBSERVE }, () => {});
  },
});
