/** Options of the cri-containerd plugin (validated by the host with ajv before apply). */
export interface CriContainerdOptions {
  /** CRI endpoint; defaults to the kubelet's containerRuntimeEndpoint. */
  endpoint?: string;
  /** Deadline of the start-up Version call, seconds. */
  connectTimeoutSeconds: number;
  /** Deadline of one PullImage call, seconds (pulls of large images take long). */
  pullTimeoutSeconds: number;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    endpoint: { type: 'string', pattern: '^unix://', 'x-allowed': 'a unix:///path/to/socket endpoint' },
    connectTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 5, 'x-allowed': 'a number of seconds > 0' },
    pullTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 600, 'x-allowed': 'a number of seconds > 0' },
  },
} as const;
