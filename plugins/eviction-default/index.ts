import { definePlugin, STAGE } from 'kubelet-ts';
import { evictionMessage } from './eviction-message.ts';
import { optionsSchema, type EvictionDefaultOptions } from './options-schema.ts';
import { rankPods } from './ranking.ts';

/**
 * eviction-default: upstream's eviction policy. When the core's eviction manager fires
 * `onPressure` (a threshold met, node-level resources already reclaimed), it ranks the
 * candidates as upstream's kubelet does and chooses the first, with upstream's message.
 * The core kills it (hard threshold: no grace; soft: the pod's, capped by
 * evictionMaxPodGracePeriod), marks it Failed/Evicted and records the event.
 */
export default definePlugin<EvictionDefaultOptions>({
  name: 'eviction-default',
  kind: 'policy',
  optionsSchema,
  apply(ctx) {
    ctx.hooks.onPressure.tap({ name: 'eviction-default', stage: STAGE.DEFAULT }, (event) => {
      const [first] = rankPods(event);
      if (!first) return undefined;
      return { evict: [{ pod: first, reason: 'Evicted', message: evictionMessage(event, first) }] };
    });
  },
});
