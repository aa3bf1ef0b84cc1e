// The public API of kubelet-ts for config authors and plugin vendors.
export { defineConfig } from './config/types.ts';
export type { KubeletConfig, KubeletConfigInput, PluginEntry } from './config/types.ts';
export { definePlugin, REQUIRED_SLOTS } from './plugins/plugin-api.ts';
export type { Capabilities, KubeletPlugin, PluginContext, PluginEvent, ProbeRun } from './plugins/plugin-api.ts';
export { STAGE } from './hooks.ts';
export type * from './hooks.ts';
export type * from './runtime/types.ts';
export { KubeletError, PluginError, ConfigError, notFound, invalidInput, unavailable, isNotFound } from './errors.ts';
export { LABEL, ANNOTATION } from './runtime/labels.ts';
