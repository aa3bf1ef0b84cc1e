/** Options of the nfs plugin (validated by the host with ajv before apply). */
export interface NfsOptions {
  /**
   * How long one `mount` may take before it is killed and the set-up retried with the volume
   * back-off. mount.nfs itself retries an unanswering server for 2 minutes (its `retry=2`);
   * the core's hookTimeout (2 min) bounds the whole tap, so the default stays below it.
   */
  mountTimeoutSeconds: number;
  /**
   * How long a plain `umount` of the volume may take before it is killed and `umount -f`
   * follows (a server that is gone leaves the plain one waiting for it; upstream's nfs plugin
   * forces after a minute). The forced one gets 30 s more: both stay within the hookTimeout.
   */
  unmountTimeoutSeconds: number;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    mountTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 100, 'x-allowed': 'an integer number of seconds from 1 to 3600' },
    unmountTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 60, 'x-allowed': 'an integer number of seconds from 1 to 3600' },
  },
} as const;
