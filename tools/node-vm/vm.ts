import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, pidAlive, run, type LineLog, noLog, type RunResult } from '../node-env/util.ts';
import type { NodeVmImage } from './image.ts';

/**
 * One boot of the node VM: qemu (TCG, no KVM on these machines) on a copy-on-write overlay of
 * the cached image, so the image stays clean; the kernel and initrd given directly; root's ssh
 * key for this boot on the kernel command line; qemu's user-mode network with the guest's ssh
 * and kubelet ports forwarded to the host's loopback. One ssh master connection carries every
 * command and the reverse forwards of host loopback ports (the control plane, the registry) to
 * the guest's loopback: the API server's certificate names 127.0.0.1, not qemu's 10.0.2.2.
 */

export interface NodeVmOptions {
  image: NodeVmImage;
  /** Everything of this boot: overlay, key, console log, qemu's pid file, ssh's control socket. */
  dir: string;
  /** A raw ext4 image labelled `kubelet-ts`, mounted read-only at /opt/kubelet-ts (the project). */
  projectImg?: string;
  /** Guest TCP ports to forward to the host's 127.0.0.1 (a free host port each). */
  guestPorts?: number[];
  /** Host loopback ports the guest reaches on its own 127.0.0.1. */
  hostPorts?: number[];
  memoryMiB?: number;
  bootTimeoutMs?: number;
  log?: LineLog;
}

export interface SshOptions {
  timeoutMs?: number;
  allowFailure?: boolean;
  input?: string;
}

/** multi-threaded TCG, 2 vCPUs: 26-39 s to multi-user measured here with qemu 10 (../shared/NODE-ENV.md). */
const QEMU_ACCEL = ['-accel', 'tcg,thread=multi', '-smp', '2', '-cpu', 'qemu64'];

export class NodeVm {
  readonly dir: string;
  /** Host port forwarded to each guest port. */
  readonly ports = new Map<number, number>();
  sshPort = 0;
  bootSeconds = 0;
  private master: ChildProcess | undefined;
  private readonly log: LineLog;

  private constructor(
    private readonly opts: NodeVmOptions,
  ) {
    this.dir = opts.dir;
    this.log = opts.log ?? noLog;
  }

  /** Boots a VM and waits until ssh answers (bounded by bootTimeoutMs, default 600 s: with the host loaded, the guest's sshd took over 4 minutes). */
  static async boot(opts: NodeVmOptions): Promise<NodeVm> {
    const vm = new NodeVm(opts);
    try {
      await vm.start();
    } catch (err) {
      const tail = await readFile(join(opts.dir, 'console.log'), 'utf8').then((t) => t.split('\n').slice(-30).join('\n'), () => '');
      await vm.stop();
      throw new Error(`${(err as Error).message}\nthe guest's console (last lines):\n${tail}`);
    }
    return vm;
  }

  private get keyFile(): string {
    return join(this.dir, 'id_ed25519');
  }

  private sshArgs(): string[] {
    return [
      '-i', this.keyFile, '-p', String(this.sshPort),
      '-o', `UserKnownHostsFile=${join(this.dir, 'known_hosts')}`, '-o', 'StrictHostKeyChecking=yes',
      '-o', 'BatchMode=yes', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=45',
      '-o', `ControlPath=${join(this.dir, 'ssh.ctl')}`,
      '-o', 'ServerAliveInterval=10', '-o', 'ServerAliveCountMax=6',
    ];
  }

  private async start(): Promise<void> {
    const { image, dir } = this.opts;
    await mkdir(dir, { recursive: true });
    const t0 = performance.now();
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', image.rootImg, join(dir, 'overlay.qcow2')]);
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'kubelet-ts-node-vm', '-f', this.keyFile]);
    const pub = (await readFile(`${this.keyFile}.pub`, 'utf8')).trim();
    this.sshPort = await freePort();
    await writeFile(join(dir, 'known_hosts'), `[127.0.0.1]:${this.sshPort} ${image.hostKey.split(' ').slice(0, 2).join(' ')}\n`);
    const fwds = [`hostfwd=tcp:127.0.0.1:${this.sshPort}-:22`];
    for (const gp of this.opts.guestPorts ?? []) {
      const hp = await freePort();
      this.ports.set(gp, hp);
      fwds.push(`hostfwd=tcp:127.0.0.1:${hp}-:${gp}`);
    }
    const append = [
      'root=/dev/vda', 'rw', 'console=ttyS0', 'net.ifnames=0', 'quiet', 'systemd.show_status=false',
      // No entropy source is slow under TCG; the guest needs none for its work here.
      'random.trust_cpu=on',
      `kts.authorized_key=${Buffer.from(pub).toString('base64')}`,
    ].join(' ');
    const args = [
      ...QEMU_ACCEL, '-m', String(this.opts.memoryMiB ?? 3072),
      '-kernel', image.kernel, '-initrd', image.initrd, '-append', append,
      '-drive', `file=${join(dir, 'overlay.qcow2')},if=virtio,format=qcow2,cache=unsafe`,
      ...(this.opts.projectImg ? ['-drive', `file=${this.opts.projectImg},if=virtio,format=raw,readonly=on`] : []),
      '-netdev', `user,id=n0,${fwds.join(',')}`, '-device', 'virtio-net-pci,netdev=n0',
      '-device', 'virtio-rng-pci',
      '-display', 'none', '-serial', `file:${join(dir, 'console.log')}`, '-monitor', 'none',
      '-no-reboot', '-daemonize', '-pidfile', join(dir, 'qemu.pid'),
    ];
    this.log(`qemu-system-x86_64 ${args.join(' ')}`);
    await run('qemu-system-x86_64', args, { timeoutMs: 60_000 });
    const deadline = Date.now() + (this.opts.bootTimeoutMs ?? 600_000);
    // Up when root's key is in (kts-authorized-key ran) and sshd answers: bounded in time, one try every 2 s.
    for (let attempt = 1; ; attempt++) {
      if (!(await this.qemuAlive())) throw new Error('node VM: qemu exited during boot');
      const r = await run('ssh', [...this.sshArgs(), '-o', 'ControlMaster=no', 'root@127.0.0.1', 'true'], { allowFailure: true, timeoutMs: 60_000 }).catch((e: Error) => ({ code: -1, stderr: e.message }) as RunResult);
      if (r.code === 0) break;
      if (Date.now() > deadline) throw new Error(`node VM: no ssh after ${this.opts.bootTimeoutMs ?? 600_000} ms (${attempt} tries; last: ${r.stderr.trim()})`);
      await sleep(2000);
    }
    await this.startMaster();
    this.bootSeconds = (performance.now() - t0) / 1000;
    this.log(`node VM up in ${this.bootSeconds.toFixed(1)} s`);
  }

  /** The ssh master: later commands multiplex over it; it carries the reverse forwards. */
  private async startMaster(): Promise<void> {
    const rev = (this.opts.hostPorts ?? []).flatMap((p) => ['-R', `127.0.0.1:${p}:127.0.0.1:${p}`]);
    this.master = spawn('ssh', [...this.sshArgs(), '-M', '-N', '-o', 'ExitOnForwardFailure=yes', ...rev, 'root@127.0.0.1'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    this.master.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const ctl = join(this.dir, 'ssh.ctl');
    for (let i = 0; i < 100 && !existsSync(ctl); i++) {
      if (this.master.exitCode !== null) throw new Error(`node VM: ssh master exited: ${err.trim()}`);
      await sleep(200);
    }
    if (!existsSync(ctl)) throw new Error(`node VM: ssh master not up in 20 s: ${err.trim()}`);
  }

  /** True while the guest's qemu runs (a guest powered off from inside ends it). */
  async running(): Promise<boolean> {
    return this.qemuAlive();
  }

  private async qemuAlive(): Promise<boolean> {
    const pid = Number(await readFile(join(this.dir, 'qemu.pid'), 'utf8').catch(() => '0'));
    return pid > 0 && pidAlive(pid);
  }

  /** Runs a shell command as root in the guest; rejects on a non-zero exit unless allowFailure. */
  async ssh(cmd: string, opts: SshOptions = {}): Promise<RunResult> {
    return run('ssh', [...this.sshArgs(), 'root@127.0.0.1', cmd], { timeoutMs: opts.timeoutMs ?? 120_000, allowFailure: opts.allowFailure, input: opts.input });
  }

  /** Writes a file in the guest (through ssh's stdin; parents made). */
  async writeFile(path: string, content: string, mode = '0644'): Promise<void> {
    const q = shellQuote(path);
    await this.ssh(`mkdir -p "$(dirname ${q})" && cat > ${q} && chmod ${mode} ${q}`, { input: content });
  }

  async readFile(path: string): Promise<string> {
    return (await this.ssh(`cat ${shellQuote(path)}`)).stdout;
  }

  /** Powers the guest off (qemu killed if it lingers), stops the ssh master, removes the boot's directory. */
  async stop(opts: { keepDir?: boolean } = {}): Promise<void> {
    if (this.master && this.master.exitCode === null) this.master.kill('SIGTERM');
    await stopQemuIn(this.dir, this.log);
    if (!opts.keepDir) await rm(this.dir, { recursive: true, force: true });
  }
}

/** Stops the qemu whose pid file is in `dir` (SIGTERM, then SIGKILL after 10 s): for stop() and for sweeping a dead run's VM. */
export async function stopQemuIn(dir: string, log: LineLog = noLog): Promise<void> {
  const pid = Number(await readFile(join(dir, 'qemu.pid'), 'utf8').catch(() => '0'));
  if (!(pid > 0) || !pidAlive(pid)) return;
  // Only a qemu: a pid file of a dead run may name a pid reused since.
  const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
  if (!comm.startsWith('qemu')) return;
  log(`stopping qemu ${pid}`);
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 50 && pidAlive(pid); i++) await sleep(200);
  if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
