/**
 * The admission checks of a pod's security settings, as upstream's kubelet runs them before a
 * pod may start (pkg/kubelet/sysctl allowlist, pkg/kubelet/lifecycle AppArmor handler): a
 * rejected pod is Failed with the reason and message, and none of its containers ever starts.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { existsSync, readFileSync } from 'node:fs';
import { requiresAppArmor } from './security-context.ts';
import { SysctlAllowlist } from './sysctls.ts';

/** runc's apparmor.IsEnabled: the securityfs dir exists and the module says `Y`. */
export function hostAppArmorEnabled(): boolean {
  try {
    return existsSync('/sys/kernel/security/apparmor') && readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').startsWith('Y');
  } catch {
    return false;
  }
}

export class SecurityAdmission {
  private readonly sysctls: SysctlAllowlist;

  /** Throws when `allowedUnsafeSysctls` names a sysctl that is not namespaced (the kubelet must not start). */
  constructor(opts: { allowedUnsafeSysctls?: readonly string[]; appArmorEnabled?: () => boolean } = {}) {
    this.sysctls = new SysctlAllowlist(opts.allowedUnsafeSysctls ?? []);
    this.appArmorEnabled = opts.appArmorEnabled ?? hostAppArmorEnabled;
  }

  private readonly appArmorEnabled: () => boolean;

  /** Why the pod may not run on this node (reason, message), or undefined if it may. */
  admit(pod: V1Pod): { reason: string; message: string } | undefined {
    const sysctl = this.sysctls.admit(pod);
    if (sysctl) return sysctl;
    // Upstream: a profile on a host without AppArmor is refused here, not left to the runtime.
    if (requiresAppArmor(pod) && !this.appArmorEnabled()) {
      return { reason: 'AppArmor', message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host' };
    }
    return undefined;
  }
}
