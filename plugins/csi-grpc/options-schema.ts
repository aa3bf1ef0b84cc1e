/** Options of the csi-grpc plugin (validated by the host with ajv before apply). */
export interface CsiGrpcOptions {
  /** Where registration sockets appear; default `<rootDir>/plugins_registry` (upstream's). */
  registryDir?: string;
  /** Rescan period of the registry dir besides watching it, seconds. */
  rescanSeconds: number;
  /** Deadline of one CSI or registration call, seconds (upstream: 2 min for mounts). */
  callTimeoutSeconds: number;
  /**
   * What a CSIDriver object would say about a driver, for the fields a kubelet reads, by driver
   * name. There is no CSIDriver without an API server; a driver not listed gets the defaults.
   */
  drivers: Record<string, { podInfoOnMount?: boolean }>;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    registryDir: { type: 'string', minLength: 1, 'x-allowed': 'a directory path' },
    rescanSeconds: { type: 'number', exclusiveMinimum: 0, default: 1, 'x-allowed': 'a number of seconds > 0' },
    callTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 120, 'x-allowed': 'a number of seconds > 0' },
    drivers: {
      type: 'object',
      default: {},
      'x-allowed': 'an object of driver name → { podInfoOnMount: boolean }',
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        'x-allowed': '{ podInfoOnMount: boolean }',
        properties: { podInfoOnMount: { type: 'boolean' } },
      },
    },
  },
} as const;
