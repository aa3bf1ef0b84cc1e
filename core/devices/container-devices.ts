/**
 * Puts a container's device allocation into its runtime config, as upstream's kubelet orders
 * it (GenerateRunContainerOptions, newContainerAnnotations): the devices' environment variables
 * come before the container's own (a variable the container sets wins), their mounts before
 * its volume mounts, their device nodes into `devices`, their CDI device names into
 * `CDIDevices` (upstream DevicePluginCDIDevices, GA in 1.31), and their annotations under the
 * kubelet's (the kubelet's own keys win).
 */
import type { ContainerConfig } from '../runtime/types.ts';
import type { ContainerAllocation } from './device-types.ts';

export function withDevices(config: ContainerConfig, a: ContainerAllocation): ContainerConfig {
  const own = new Set(config.envs.map((e) => e.key));
  const deviceEnvs = Object.entries(a.envs).filter(([key]) => !own.has(key)).map(([key, value]) => ({ key, value }));
  return {
    ...config,
    envs: [...deviceEnvs, ...config.envs],
    mounts: [...a.mounts.map((m) => ({ containerPath: m.containerPath, hostPath: m.hostPath, readonly: m.readOnly, selinuxRelabel: false })), ...config.mounts],
    devices: [...(config.devices ?? []), ...a.devices.map((d) => ({ containerPath: d.containerPath, hostPath: d.hostPath, permissions: d.permissions }))],
    ...(a.cdiDevices.length > 0 ? { CDIDevices: [...(config.CDIDevices ?? []), ...a.cdiDevices.map((name) => ({ name }))] } : {}),
    annotations: { ...a.annotations, ...config.annotations },
  };
}

/** True when an allocation gives the container nothing (no config change needed). */
export function isEmptyAllocation(a: ContainerAllocation): boolean {
  return Object.keys(a.envs).length === 0 && a.mounts.length === 0 && a.devices.length === 0 && a.cdiDevices.length === 0 && Object.keys(a.annotations).length === 0;
}
