/**
 * A valid static pod manifest that uses most of what the kubelet reads: init containers and
 * a sidecar, env from values and fields, ports, resources as numbers and quantities, every
 * probe and handler kind, mounts of every built-in volume type, security contexts, DNS,
 * host aliases, node selector and tolerations. The manifest unit test pins its UID (a
 * restarted kubelet must recognise its pods after an upgrade); the fuzz suite derives its
 * malformed cases from it.
 *
 * Every scalar here reads the same in YAML 1.1 and 1.2 (no octal, no yes/no), so its meaning
 * did not change when the decoder moved to YAML 1.1 scalars.
 */
export const RICH_POD_YAML = `apiVersion: v1
kind: Pod
metadata:
  name: rich
  namespace: kube-system
  labels:
    app: rich
    app.kubernetes.io/component: demo
    tier: "1"
  annotations:
    example.com/note: a note
    checksum: abc123
spec:
  hostAliases:
  - ip: 10.1.2.3
    hostnames: [foo.local, bar.local]
  dnsPolicy: ClusterFirst
  dnsConfig:
    nameservers: [1.1.1.1]
    searches: [svc.local]
    options:
    - name: ndots
      value: "2"
  restartPolicy: Always
  terminationGracePeriodSeconds: 5
  activeDeadlineSeconds: 3600
  nodeSelector:
    kubernetes.io/os: linux
  tolerations:
  - key: node-role.kubernetes.io/control-plane
    operator: Exists
    effect: NoSchedule
  priorityClassName: system-node-critical
  securityContext:
    runAsUser: 1000
    runAsGroup: 1000
    fsGroup: 2000
    supplementalGroups: [3000]
    sysctls:
    - name: net.ipv4.ip_unprivileged_port_start
      value: "0"
  volumes:
  - name: scratch
    emptyDir:
      sizeLimit: 64Mi
  - name: cache
    emptyDir:
      medium: Memory
  - name: host
    hostPath:
      path: /var/log
      type: Directory
  - name: config
    configMap:
      name: rich-config
      defaultMode: 420
      items:
      - key: app.conf
        path: app.conf
        mode: 256
      optional: true
  - name: creds
    secret:
      secretName: rich-secret
      optional: true
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef:
          fieldPath: metadata.labels
      - path: cpu-limit
        resourceFieldRef:
          containerName: app
          resource: limits.cpu
          divisor: 1m
  - name: bundle
    projected:
      sources:
      - configMap:
          name: rich-config
          optional: true
      - downwardAPI:
          items:
          - path: name
            fieldRef:
              fieldPath: metadata.name
  initContainers:
  - name: prepare
    image: busybox:1.36
    command: ["sh", "-c", "echo prepared > /scratch/ready"]
    volumeMounts:
    - name: scratch
      mountPath: /scratch
  - name: logshipper
    image: busybox:1.36
    restartPolicy: Always
    command: ["sh", "-c", "exec tail -F /var/log/app.log"]
    readinessProbe:
      exec:
        command: ["true"]
      periodSeconds: 5
  containers:
  - name: app
    image: busybox:1.36
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c"]
    args: ["exec httpd -f -p 8080 -h /www"]
    workingDir: /www
    ports:
    - name: http
      containerPort: 8080
      protocol: TCP
    - containerPort: 9090
      hostPort: 19090
    env:
    - name: GREETING
      value: hello
    - name: MESSAGE
      value: $(GREETING) world
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: MEM_LIMIT
      valueFrom:
        resourceFieldRef:
          resource: limits.memory
          divisor: 1Mi
    resources:
      requests:
        cpu: 100m
        memory: 32Mi
      limits:
        cpu: 1
        memory: 64Mi
    livenessProbe:
      httpGet:
        path: /healthz
        port: http
        httpHeaders:
        - name: X-Probe
          value: liveness
      initialDelaySeconds: 3
      periodSeconds: 10
      timeoutSeconds: 2
      failureThreshold: 3
    readinessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 5
      successThreshold: 1
    startupProbe:
      grpc:
        port: 9090
      failureThreshold: 30
      periodSeconds: 2
    lifecycle:
      postStart:
        exec:
          command: ["sh", "-c", "echo started"]
      preStop:
        sleep:
          seconds: 2
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      runAsNonRoot: true
      capabilities:
        add: [NET_BIND_SERVICE]
        drop: [ALL]
    volumeMounts:
    - name: scratch
      mountPath: /www
    - name: cache
      mountPath: /cache
    - name: host
      mountPath: /host-logs
      readOnly: true
      mountPropagation: HostToContainer
    - name: config
      mountPath: /etc/app
    - name: creds
      mountPath: /etc/creds
      readOnly: true
    - name: info
      mountPath: /etc/info
    - name: bundle
      mountPath: /etc/bundle
      subPath: name
    terminationMessagePolicy: FallbackToLogsOnError
  - name: helper
    image: registry.local:5000/team/helper@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    command: ["sleep", "3600"]
    stdin: true
    tty: true
    resources:
      limits:
        cpu: 250m
        memory: 1Gi
        ephemeral-storage: 1G
`;
