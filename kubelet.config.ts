// The default plugin bundle: what `kubelet-ts` runs with when no --config is given.
// Copy this file to start your own; every field is optional (see docs/operating/configuration.md).
import { defineConfig } from 'kubelet-ts';

export default defineConfig({
  rootDir: '/var/lib/kubelet',
  podLogsDir: '/var/log/pods',
  staticPodPath: '/etc/kubernetes/manifests',
  containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
  readOnlyPort: 10255,
  plugins: [
    ['cri-containerd', { pullTimeoutSeconds: 600 }],
    ['probes'],
    ['csi-grpc'],
    // nfs volumes and PersistentVolumes, with the node's mount.nfs (Debian package nfs-common).
    ['nfs'],
    // iscsi volumes and PersistentVolumes, with the node's open-iscsi (Debian package open-iscsi).
    ['iscsi'],
    // flexVolume exec drivers that mount without attaching, from volumePluginDir (--volume-plugin-dir).
    ['flexvolume'],
    ['eviction-default'],
    // Reads imageCredentialProviderConfig (--image-credential-provider-config); declines to load without it.
    ['credential-provider-exec'],
    ['device-plugins'],
    ['pod-resources'],
  ],
});
