/**
 * The checks of the configuration the kubelet's start makes beyond loadConfig's, because they
 * need a part the start builds (the sysctl allowlist, the applied plugins' taps). One place, so
 * that `kubelet-ts config validate` refuses exactly what a start would.
 */
import { ConfigError, errorMessage } from './errors.ts';
import type { KubeletHooks } from './hooks.ts';
import { SecurityAdmission } from './pod/security-admission.ts';
import type { KubeletConfig } from './config/types.ts';

/** The pod security admission of this config; as upstream, an allowedUnsafeSysctls entry that is not namespaced stops the start (ConfigError). */
export function securityAdmissionOf(config: KubeletConfig): SecurityAdmission {
  try {
    return new SecurityAdmission({ allowedUnsafeSysctls: config.allowedUnsafeSysctls });
  } catch (err) {
    throw new ConfigError(`${config.configFile ?? 'config'}: ${errorMessage(err)}`);
  }
}

/** Once the plugins are applied: flags must not be ignored silently by a config whose plugins leave out the one that reads them. */
export function checkAppliedPlugins(config: KubeletConfig, hooks: KubeletHooks): void {
  if (config.imageCredentialProviderConfig && hooks.imageCredentials.taps.length === 0) {
    throw new ConfigError(`${config.configFile ?? 'config'}: imageCredentialProviderConfig (--image-credential-provider-config) is set but no plugin provides image credentials: add 'credential-provider-exec' to plugins`);
  }
}
