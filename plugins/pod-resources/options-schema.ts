/** Options of the pod-resources plugin (validated by the host with ajv before apply). */
export interface PodResourcesOptions {
  /** Where `kubelet.sock` is served; default `<rootDir>/pod-resources` (upstream's). */
  socketDir?: string;
  /** Requests per second the API answers, with bursts of `burst` (upstream: 100 and 10); more are refused with ResourceExhausted. */
  qps: number;
  burst: number;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    socketDir: { type: 'string', minLength: 1, 'x-allowed': 'a directory path' },
    qps: { type: 'number', exclusiveMinimum: 0, maximum: 10000, default: 100, 'x-allowed': 'a number of requests per second > 0, at most 10000' },
    burst: { type: 'integer', minimum: 1, maximum: 10000, default: 10, 'x-allowed': 'an integer from 1 to 10000' },
  },
} as const;
