/**
 * Options of the eviction-default plugin. Thresholds are not options: they are the kubelet's
 * own configuration fields (`evictionHard`, `evictionSoft`, ...), read by the core's eviction
 * manager, as upstream's KubeletConfiguration has them. The policy has nothing to tune yet.
 */
export type EvictionDefaultOptions = Record<string, never>;

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {},
} as const;
