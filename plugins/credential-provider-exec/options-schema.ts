/**
 * Options of the credential-provider-exec plugin. The providers are not options: they are the
 * kubelet's own settings, `imageCredentialProviderConfig` and `imageCredentialProviderBinDir`
 * (upstream's flags --image-credential-provider-config and --image-credential-provider-bin-dir),
 * so that a node's existing flags and CredentialProviderConfig file carry over as they are.
 */
export type CredentialProviderExecOptions = Record<string, never>;

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {},
} as const;
