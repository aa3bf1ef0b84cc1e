// A config whose plugins provide no runtime: the host must refuse to start.
import { defineConfig, definePlugin } from 'kubelet-ts';

export default defineConfig({
  plugins: [
    definePlugin({
      name: 'lonely-observer',
      kind: 'observability',
      apply(ctx) {
        ctx.hooks.afterStart.tap('lonely-observer', () => {});
      },
    }),
  ],
});
