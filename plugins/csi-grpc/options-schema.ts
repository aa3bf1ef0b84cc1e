/** Options of the csi-grpc plugin (validated by the host with ajv before apply). */
export interface CsiGrpcOptions {
  /** Where registration sockets appear; default `<rootDir>/plugins_registry` (upstream's). */
  registryDir?: string;
  /** Rescan period of the registry dir besides watching it, seconds. */
  rescanSeconds: number;
  /** Deadline of one CSI or registration call, seconds (upstream: 2 min for mounts). */
  callTimeoutSeconds: number;
  /** Stage inline ephemeral volumes (NodeStageVolume) when the driver has STAGE_UNSTAGE_VOLUME. Upstream never stages them. */
  stageInlineVolumes: boolean;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    registryDir: { type: 'string', minLength: 1, 'x-allowed': 'a directory path' },
    rescanSeconds: { type: 'number', exclusiveMinimum: 0, default: 1, 'x-allowed': 'a number of seconds > 0' },
    callTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 120, 'x-allowed': 'a number of seconds > 0' },
    stageInlineVolumes: { type: 'boolean', default: true },
  },
} as const;
