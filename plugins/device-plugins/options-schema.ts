/** Options of the device-plugins plugin (validated by the host with ajv before apply). */
export interface DevicePluginsOptions {
  /** The device plugin dir: `kubelet.sock` and the plugins' sockets; default upstream's fixed /var/lib/kubelet/device-plugins, whatever the root dir (plugins dial that path). */
  socketDir?: string;
  /** The most resources device plugins may register through this kubelet. */
  maxResources: number;
  /** How long a plugin's socket may take to answer when it registers, seconds (upstream: 10). */
  dialTimeoutSeconds: number;
  /** Deadline of Allocate, GetPreferredAllocation and PreStartContainer, seconds (upstream: 30 for PreStartContainer). */
  callTimeoutSeconds: number;
  /** The largest message a plugin may send, bytes (gRPC's default: 4 MiB). */
  maxMessageBytes: number;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    socketDir: { type: 'string', minLength: 1, 'x-allowed': 'a directory path' },
    maxResources: { type: 'integer', minimum: 1, maximum: 256, default: 64, 'x-allowed': 'an integer from 1 to 256' },
    dialTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, maximum: 300, default: 10, 'x-allowed': 'a number of seconds > 0, at most 300' },
    callTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, maximum: 300, default: 30, 'x-allowed': 'a number of seconds > 0, at most 300' },
    maxMessageBytes: { type: 'integer', minimum: 65536, maximum: 67108864, default: 4194304, 'x-allowed': 'a number of bytes from 64 KiB to 64 MiB' },
  },
} as const;
