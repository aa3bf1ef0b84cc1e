/** Options of the probes plugin (validated by the host with ajv before apply). */
export interface ProbesOptions {
  /** At most this many exec probes (CRI ExecSync calls) run at once, over all containers. */
  execConcurrency: number;
  /**
   * Delay the first run of each worker started within one period of the kubelet's start by a
   * random part of the period (upstream), so adopted containers are not all probed at once.
   */
  jitter: boolean;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    execConcurrency: { type: 'integer', minimum: 1, default: 16, 'x-allowed': 'an integer >= 1' },
    jitter: { type: 'boolean', default: true, 'x-allowed': 'true or false' },
  },
} as const;
