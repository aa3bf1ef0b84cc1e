/**
 * The flags `kubelet-ts run`, `plugins` and `config validate|view` share (they load the
 * configuration the same way): one text, so each command's -h and the global usage list the
 * same flags.
 */
import { configSchema } from '../config/schema.ts';

/** The log levels the config schema accepts, so the help can never list fewer or others. */
const LOG_LEVELS = (configSchema.properties.logging.properties.level.enum as readonly string[]).join('|');

/** The flag list, one flag a line (they mirror the upstream kubelet's and override the config file). */
export const KUBELET_FLAGS_USAGE = `  --config FILE                     kubelet-ts's config (kubelet.config.ts|js|json|yaml), or upstream's KubeletConfiguration
                                    (kind: KubeletConfiguration, as kubeadm writes /var/lib/kubelet/config.yaml); default:
                                    the package's kubelet.config.ts
  --plugins-config FILE             with a KubeletConfiguration --config: kubelet-ts's own file for plugins (and the fields
                                    upstream has no place for); default: the package's plugin bundle
  --kubeconfig FILE                 join the cluster of this kubeconfig's API server (kubeconfig); unset: standalone
  --bootstrap-kubeconfig FILE       TLS bootstrap: get a client certificate with this kubeconfig's token when
                                    --kubeconfig is missing or expired, and write --kubeconfig (bootstrapKubeconfig)
  --pod-manifest-path DIR           directory of static pod manifests (staticPodPath)
  --manifest-url URL                URL of static pods, a Pod or a PodList (staticPodURL)
  --manifest-url-header 'a:x,b:y'   headers for --manifest-url, repeatable (staticPodURLHeader)
  --container-runtime-endpoint EP   CRI endpoint, unix:///path (containerRuntimeEndpoint)
  --root-dir DIR                    kubelet state directory (rootDir)
  --hostname-override NAME          node name (nodeName); --node-name NAME is the same
  --node-ip IP                      node IP reported as hostIP (nodeIP)
  --node-labels k=v,...             labels the Node registers with (nodeLabels)
  --register-with-taints k=v:Effect,...  taints the Node registers with (registerWithTaints)
  --cluster-dns IP,...              DNS servers of ClusterFirst pods (clusterDNS)
  --cluster-domain DOMAIN           the cluster's DNS domain (clusterDomain)
  --resolv-conf FILE                the resolver config pods inherit (resolvConf)
  --port N                          the main HTTPS port, authenticated (port, default 10250)
  --tls-cert-file FILE              the main port's serving certificate (tlsCertFile)
  --tls-private-key-file FILE       its key (tlsPrivateKeyFile)
  --cert-dir DIR                    where a self-signed pair is made when no certificate is given (certDirectory)
  --image-credential-provider-config FILE
                                    the exec image credential providers' CredentialProviderConfig, a file or
                                    a directory (imageCredentialProviderConfig; needs the credential-provider-exec plugin)
  --image-credential-provider-bin-dir DIR
                                    the directory of their executables (imageCredentialProviderBinDir)
  --read-only-port N                read-only HTTP port, 0 disables (readOnlyPort)
  --healthz-port N                  plain-HTTP /healthz on --healthz-bind-address, 0 disables (healthzPort)
  --rotate-certificates             renew the client certificate before it expires (rotateCertificates)
  --cgroup-driver cgroupfs          kubelet-ts drives cgroupfs only: systemd is accepted with a warning (cgroupDriver)
  --pod-infra-container-image IMG   accepted and ignored: the sandbox image comes from the runtime
  -v, --v N                         log verbosity as upstream's: 0-2 info, 3-4 debug, 5+ trace
  --log-level LEVEL                 ${LOG_LEVELS} (logging.level, default info)
  --version                         print the version (Kubernetes vX.Y.Z+kubelet-ts.V) and exit
  -h, --help                        this help
Every other flag of the upstream kubelet (v1.28) is accepted: --flag=value or --flag value, a
boolean as --flag or --flag=false. One warning line at start names those kubelet-ts ignores.
`;
