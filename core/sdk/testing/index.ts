/**
 * `kubelet-ts/testing`: what a vendor needs to prove a plugin correct in their own repository,
 * with mocha: contract suites (one test per rule, named for it), a harness that applies
 * plugins as a kubelet does, and an in-memory runtime for tests that need no containerd.
 *
 *     import { describeVolumeContract, startPluginsForTest } from 'kubelet-ts/testing';
 *     describeVolumeContract('ramdisk', async () => ({ type: 'ramdisk', volume, rootDir,
 *       start: () => startPluginsForTest([['my-plugin', {}]], { rootDir }) }));
 *
 * (`'my-plugin'` is resolved as the kubelet resolves a `plugins` entry, from the working
 * directory mocha runs in: the package's own name through its `exports`, or an installed
 * package; `projectDir` says another directory.)
 *
 * The runtime contract takes a runtime, the volume contract a volume type's provider, the
 * network contract a network plugin with the runtime that calls it, the image-credentials
 * contract an image credential provider (a plugin tapping `imageCredentials`), the device
 * provider contract a plugin that registers a device provider (`ctx.devices()`).
 */
export { MemoryRuntime } from '../../runtime/memory-runtime.ts';
export { startPluginsForTest, type PluginTestOptions, type PluginsUnderTest, type RecordedDeviceProvider } from './plugin-harness.ts';
export type { ContractFailure, ContractRule } from './contract.ts';
export { describeRuntimeContract, checkRuntimeContract, runtimeContractRules, type RuntimeContractSubject } from './runtime-contract.ts';
export { describeVolumeContract, checkVolumeContract, volumeContractRules, type VolumeContractSubject } from './volume-contract.ts';
export { describeNetworkContract, checkNetworkContract, networkContractRules, type NetworkContractSubject } from './network-contract.ts';
export { describeImageCredentialsContract, checkImageCredentialsContract, imageCredentialsContractRules, type ImageCredentialsContractSubject } from './credentials-contract.ts';
export { describeDeviceProviderContract, checkDeviceProviderContract, deviceProviderContractRules, type DeviceProviderContractSubject } from './device-contract.ts';
