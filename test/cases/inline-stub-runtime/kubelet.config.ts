// `kubelet-ts plugins` fixture: an inline runtime stub plus an inline policy plugin.
import { defineConfig, definePlugin, STAGE } from 'kubelet-ts';
import { unusedRuntime } from '../../support/recorder-plugin.ts';

const stubRuntime = definePlugin({
  name: 'inline-runtime',
  kind: 'runtime',
  apply(ctx) {
    ctx.provide('runtime', unusedRuntime());
  },
});

const admission = definePlugin({
  name: 'inline-admission',
  kind: 'policy',
  apply(ctx) {
    ctx.hooks.admitPod.tapPromise({ name: 'inline-admission', stage: STAGE.POLICY }, async () => undefined);
    ctx.hooks.onPressure.tap('inline-admission', () => undefined);
  },
});

export default defineConfig({
  plugins: [stubRuntime, admission],
});
