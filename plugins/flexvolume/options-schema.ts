/** Options of the flexvolume plugin (validated by the host with ajv before apply). */
export interface FlexVolumeOptions {
  /** The drivers' directory; default the kubelet's `volumePluginDir` (upstream's `--volume-plugin-dir`). */
  pluginDir?: string;
  /** How long one driver call may take before it is killed (upstream sets none; a hung driver would hold the pod for ever). */
  callTimeoutSeconds: number;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    pluginDir: { type: 'string', minLength: 1, 'x-allowed': 'a directory path' },
    callTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 110, 'x-allowed': 'an integer number of seconds from 1 to 3600' },
  },
} as const;
