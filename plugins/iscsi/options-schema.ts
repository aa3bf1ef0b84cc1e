/** Options of the iscsi plugin (validated by the host with ajv before apply). */
export interface IscsiOptions {
  /** How long one iscsiadm call (a discovery, a login) may take before it is killed. */
  commandTimeoutSeconds: number;
  /** How long the LUN's device may take to appear after a login (upstream: 10 s). */
  deviceWaitSeconds: number;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    commandTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 60, 'x-allowed': 'an integer number of seconds from 1 to 3600' },
    deviceWaitSeconds: { type: 'integer', minimum: 1, maximum: 600, default: 10, 'x-allowed': 'an integer number of seconds from 1 to 600' },
  },
} as const;
