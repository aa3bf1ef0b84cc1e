import fs from 'node:fs/promises';
import path from 'node:path';
import { createBroker, createClient, defineInterface, type DBusBroker, type MessageBus } from 'dbus-native';
import { toSystemdPath, type CgroupName } from '../../core/cgroups/cgroup-name.ts';
import { SYSTEMD_BUS_NAME } from '../../core/systemd/systemd-manager.ts';

/**
 * A fake systemd manager on a private D-Bus broker (dbus-native's, over a unix socket), for
 * unit tests of the kubelet's systemd client over the real wire protocol: StartTransientUnit,
 * SetUnitProperties and StopUnit with systemd's error names, a JobRemoved signal per job, and
 * a slice's cgroup directory made under `cgroupRoot` as systemd would make it. The real systemd
 * is met in the node VM suite (test/vm).
 */
export interface FakeSystemd {
  /** The bus address to connect to (`unix:path=...`). */
  address: string;
  /** Calls received, in order: method, unit name, properties as `{ name: value }`. */
  calls: Array<{ method: string; unit: string; properties: Record<string, unknown> }>;
  /** Units loaded, with their properties. */
  units: Map<string, Record<string, unknown>>;
  /** The next job of this unit ends with this result instead of `done`. */
  failNextJob(unit: string, result: string): void;
  stop(): Promise<void>;
}

export async function startFakeSystemd(opts: { dir: string; cgroupRoot: string }): Promise<FakeSystemd> {
  const socket = path.join(opts.dir, 'bus.sock');
  const broker: DBusBroker = createBroker();
  const address = await new Promise<string>((resolve, reject) => broker.listen({ socket }, (err, addr) => (err ? reject(err) : resolve(addr))));
  const service: MessageBus = createClient({ busAddress: address, returnBigInt: true, plainValues: true });
  await new Promise<void>((resolve) => service.connection.once('connect', () => resolve()));
  const calls: FakeSystemd['calls'] = [];
  const units = new Map<string, Record<string, unknown>>();
  const failing = new Map<string, string>();
  let jobId = 0;

  const sliceDir = (unit: string) => {
    const components = unit.slice(0, -'.slice'.length).split('-');
    return path.join(opts.cgroupRoot, toSystemdPath(components as CgroupName));
  };
  const finishJob = (unit: string): string => {
    const id = ++jobId;
    const job = `/org/freedesktop/systemd1/job/${id}`;
    const result = failing.get(unit) ?? 'done';
    failing.delete(unit);
    // After the reply, as systemd sends it once the job ran.
    setTimeout(() => manager.emit.JobRemoved!(id, job, unit, result), 5);
    return job;
  };
  const fail = (name: string, message: string) => Object.assign(new Error(message), { dbusName: name });
  const props = (list: Array<[string, unknown]>) => Object.fromEntries(list.map(([k, v]) => [k, v]));

  const manager = defineInterface({
    name: 'org.freedesktop.systemd1.Manager',
    methods: {
      Subscribe: { handler: () => undefined },
      StartTransientUnit: {
        in: { name: 's', mode: 's', properties: 'a(sv)', aux: 'a(sa(sv))' },
        out: { job: 'o' },
        handler: async ({ name, properties }: { name: string; properties: Array<[string, unknown]> }) => {
          calls.push({ method: 'StartTransientUnit', unit: name, properties: props(properties) });
          if (units.has(name)) throw fail('org.freedesktop.systemd1.UnitExists', `Unit ${name} was already loaded or has a fragment file.`);
          units.set(name, props(properties));
          await fs.mkdir(sliceDir(name), { recursive: true });
          return finishJob(name);
        },
      },
      SetUnitProperties: {
        in: { name: 's', runtime: 'b', properties: 'a(sv)' },
        handler: ({ name, properties }: { name: string; properties: Array<[string, unknown]> }) => {
          calls.push({ method: 'SetUnitProperties', unit: name, properties: props(properties) });
          const unit = units.get(name);
          if (!unit) throw fail('org.freedesktop.systemd1.NoSuchUnit', `Unit ${name} not loaded.`);
          Object.assign(unit, props(properties));
          return undefined;
        },
      },
      StopUnit: {
        in: { name: 's', mode: 's' },
        out: { job: 'o' },
        handler: async ({ name }: { name: string }) => {
          calls.push({ method: 'StopUnit', unit: name, properties: {} });
          if (!units.has(name)) throw fail('org.freedesktop.systemd1.NoSuchUnit', `Unit ${name} not loaded.`);
          units.delete(name);
          await fs.rm(sliceDir(name), { recursive: true, force: true });
          return finishJob(name);
        },
      },
    },
    signals: { JobRemoved: { args: { id: 'u', job: 'o', unit: 's', result: 's' } } },
  });
  await service.requestName(SYSTEMD_BUS_NAME, 0);
  await service.export('/org/freedesktop/systemd1', manager);

  return {
    address,
    calls,
    units,
    failNextJob: (unit, result) => failing.set(unit, result),
    async stop() {
      await service.close().catch(() => {});
      await new Promise<void>((resolve) => broker.close(() => resolve()));
    },
  };
}
