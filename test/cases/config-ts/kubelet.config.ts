// A TypeScript config: typed by defineConfig, relative paths resolve against this directory.
import { defineConfig } from 'kubelet-ts';

const minutes = (n: number): string => `${n}m`;

export default defineConfig({
  nodeName: 'node-from-ts',
  rootDir: './state',
  podLogsDir: 'logs',
  staticPodPath: './manifests',
  syncFrequency: '1m30s',
  fileCheckFrequency: '500ms',
  runtimeRequestTimeout: minutes(3),
  hookTimeout: 45,
  readOnlyPort: 10255,
  crashLoopBackOff: { maxContainerRestartPeriod: '1h' },
  logging: { level: 'debug' },
});
