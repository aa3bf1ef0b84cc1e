/** Options of the nfs plugin (validated by the host with ajv before apply). */
export interface NfsOptions {
  /**
   * How long one `mount` may take before it is killed and the set-up retried with the volume
   * back-off. mount.nfs itself retries an unanswering server for 2 minutes (its `retry=2`).
   */
  mountTimeoutSeconds: number;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    mountTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 150, 'x-allowed': 'an integer number of seconds from 1 to 3600' },
  },
} as const;
