// A plugin with an options schema: `greeting` is required, `times` has a default.
import { definePlugin } from 'kubelet-ts';

export interface GreeterOptions { greeting: string; times: number }

export default definePlugin<GreeterOptions>({
  name: 'greeter',
  kind: 'other',
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['greeting'],
    properties: {
      greeting: { type: 'string', minLength: 1 },
      times: { type: 'integer', minimum: 1, default: 3, 'x-allowed': 'an integer >= 1' },
    },
  },
  apply(ctx) {
    ctx.hooks.afterStart.tap('greeter', () => {});
  },
});
