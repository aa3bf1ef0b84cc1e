/**
 * The plugin SDK: everything a kubelet-ts plugin may use, in one module, imported as
 * `kubelet-ts` (package.json `exports`). Built-in plugins import nothing else of the core
 * (test/unit/sdk-boundary.test.ts enforces it), so each of them is an example a vendor's
 * npm package can copy line for line.
 *
 * What is here, by what a plugin does with it:
 * - define a plugin or a config: `definePlugin`, `defineConfig`, their types, `PLUGIN_KINDS`
 *   (the kinds the host accepts);
 * - tap the hooks: their event types, `STAGE` (tap order), the hook kinds (documented in
 *   hooks.ts, hook by hook: what a tap may change and what a throw does);
 * - provide the runtime slot: the CRI-shaped `ContainerRuntime` interface and its types, the
 *   `io.kubernetes.*` labels and annotations that adoption after a restart reads back;
 * - provide (or use) the network slot: `NetworkService`, its hooks (`networkSetUp`,
 *   `networkTearDown`) and their events, the attachment shape `PodNetwork`;
 * - provide devices of an extended resource: `DeviceProvider`, registered with `ctx.devices()`
 *   (the device manager's view: `DeviceManagerView`), and read allocations (podresources);
 * - stop when the core gives up: every asynchronous hook's taps get a `HookContext` last
 *   (`ctx.signal`), every runtime and device call takes `CallOptions` last (`{ signal }`): the
 *   AbortSignal aborts when hookTimeout or runtimeRequestTimeout expires, or when the work that
 *   made it is given up on; pass it on to what you start, and to the runtime calls a tap makes
 *   (util/cancellation.ts);
 * - fail well: coded errors (`KubeletError` with a `code` the core acts on: `InvalidInput` is
 *   not retried as `Unavailable` is), `errorMessage` for any thrown value;
 * - helpers a plugin legitimately needs and should not rewrite: mount utilities, `$(VAR)`
 *   expansion, Kubernetes quantities, a concurrency limiter, timer clamps (Node's timers
 *   overflow past 2^31-1 ms), a deadline on a promise (`withTimeout`), named container ports, Go durations, YAML read as hostile input, a unix socket listener
 *   for gRPC servers that Go clients call (`serveHttp2OnUnixSocket`), a .proto's gRPC service
 *   definitions without @grpc/proto-loader's reflection descriptors (`loadGrpcServiceDefinitions`)
 *   and client constructors by service name (`loadGrpcClientConstructors`), a unary call with a
 *   deadline as a promise (`unary`) and Go's text of a gRPC error (`rpcErrorText`);
 * - provide image credentials (the `imageCredentials` hook): upstream's `matchImages` matching,
 *   image repository names, and its keyring (which credentials of an `auth` map apply, in order).
 *
 * Anything not exported here is the core's own and may change without notice.
 */

// Defining plugins and configs.
export { defineConfig } from '../config/types.ts';
export type { KubeletConfig, KubeletConfigInput, PluginEntry } from '../config/types.ts';
export { definePlugin, PLUGIN_KINDS, REQUIRED_SLOTS } from '../plugins/plugin-api.ts';
export type { Capabilities, KubeletPlugin, PluginContext, PluginEvent, PluginKind, ProbeRun } from '../plugins/plugin-api.ts';
export type { Logger } from '../logger.ts';

// Hooks and their events.
export { STAGE } from '../hooks.ts';
export type * from '../hooks.ts';
// Cancellation, passed explicitly: hook contexts, call options and their signals.
export { NEVER_ABORTS, childSignal, hookContext, signalOf, untilAborted } from '../util/cancellation.ts';
export type { CallOptions, ChildSignal, HookContext } from '../util/cancellation.ts';
export type { ObjectSource } from '../objects/object-source.ts';
export type { StorageObjectSource } from '../objects/storage-objects.ts';

// The runtime slot: its interface and the labels adoption depends on.
export type * from '../runtime/types.ts';
export { LABEL, ANNOTATION } from '../runtime/labels.ts';

// The network slot: the service a network plugin provides, its hooks and their events.
export { createNetworkHooks, networkHooksView } from './network.ts';
export type { NetworkService, NetworkHooks, NetworkHooksView, NetworkSetUpEvent, NetworkTearDownEvent, PodNetwork, PodRef } from './network.ts';

// Device providers (device plugins in-process): what `ctx.devices()` registers and reads.
export type { ContainerAllocation, ContainerDevices, Device, DeviceHealth, DeviceManagerView, DeviceMount, DeviceNode, DeviceProvider, DeviceRegistration, PreferredAllocationRequest, ResourceDevices } from '../devices/device-types.ts';
export { isExtendedResourceName } from '../devices/resource-names.ts';

// Coded errors.
export { KubeletError, PluginError, ConfigError, notFound, invalidInput, unavailable, isNotFound, isKubeletError, isPluginError, errorCode, errorMessage } from '../errors.ts';
export type { ErrorCode, PluginHostErrorCode } from '../errors.ts';

// Helpers.
export { isMountPoint, isLikelyMountPoint, mountCount, mountsUnder, readMounts, parseMountInfo, bindMount, mountTmpfs, mountFilesystem, unmount, unmountUnder, removeUnmounted, removeOneFilesystem, isWithin } from '../volumes/mount-utils.ts';
export type { MountInfo, UnmountOptions } from '../volumes/mount-utils.ts';
export { formatAndMount } from '../volumes/format-and-mount.ts';
export { fsFigures } from '../stats/host-readers.ts';
export { networkFsFigures } from '../stats/network-fs-figures.ts';
export type { FsFigures } from '../stats/host-readers.ts';
export { podFsGroup, setVolumeOwnership } from '../volumes/volume-ownership.ts';
export { expandVars } from '../pod/expansion.ts';
export { parseQuantity, quantityValue, milliCPU, bytes, binaryQuantity, QUANTITY_SYNTAX_ERROR } from '../objects/quantity.ts';
export { podFullName, containersOf, allContainersOf, ephemeralContainersOf, isSidecar } from '../objects/pod-util.ts';
export { resolvePort } from '../pod/container-ports.ts';
export { Limiter } from '../util/limiter.ts';
export { serveHttp2OnUnixSocket } from '../util/h2-authority.ts';
export type { UnixHttp2Listener } from '../util/h2-authority.ts';
export { loadGrpcServiceDefinitions, loadGrpcClientConstructors } from '../util/grpc-proto.ts';
export type { GrpcProtoOptions, GrpcClientConstructors, GrpcServiceShortName } from '../util/grpc-proto.ts';
export { unary, rpcErrorText } from '../util/grpc-call.ts';
export { MAX_TIMER_MS, MAX_GRACE_SECONDS, clampTimerMs, secondsToTimerMs, clampSeconds } from '../util/timeouts.ts';
export { withTimeout, TIMED_OUT } from '../util/with-timeout.ts';
export type { TimedOut, TimeoutOptions } from '../util/with-timeout.ts';

// Image credential providers (the `imageCredentials` hook): upstream's image matching, and the
// readers a provider needs for its config (Go durations, YAML read as hostile input).
export { imageMatches, imagePatternProblem, imageRepository, repositoryRegistry } from '../credentials/image-match.ts';
export { keyringLookup } from '../credentials/keyring.ts';
export type { ProvidedAuth } from '../credentials/keyring.ts';
export { parseDuration, formatDuration } from '../util/duration.ts';
export { parseYamlDocument, DocumentError } from '../objects/yaml-decoder.ts';
