import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort, portSlice } from '../../tools/node-env/util.ts';
import { hostRequirementMissing } from '../support/host-requirement.ts';

describe('freePort (the ports test servers and the control plane bind)', () => {
  it('picks ports below the ephemeral range, where no outgoing connection takes them, never the same twice', async function () {
    if (process.platform !== 'linux') hostRequirementMissing(this, 'Linux', `freePort reads /proc/sys/net/ipv4/ip_local_port_range; this is ${process.platform}`);
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    const ports = [];
    for (let i = 0; i < 40; i++) ports.push(await freePort());
    for (const p of ports) assert.ok(p >= 10_000 && p < low, `port ${p} is outside [10000, ${low})`);
    assert.equal(new Set(ports).size, ports.length, `a port was handed out twice: ${ports.join(' ')}`);
  });

  it('a port it returns can be bound', async () => {
    const port = await freePort();
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => srv.close(resolve));
  });

  it('never hands out a port a listener holds on another address than loopback (a kubelet binds 0.0.0.0)', async function () {
    if (process.platform !== 'linux') hostRequirementMissing(this, 'Linux', `freePort reads /proc/sys/net/ipv4/ip_local_port_range; this is ${process.platform}`);
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    // Hold every port of a small slice on a non-loopback address of the loopback net; freePort,
    // given only that slice, must not return one of them.
    const held: Array<ReturnType<typeof createServer>> = [];
    const saved = process.env.KUBELET_TS_PORT_SLOT;
    const slots = Math.floor((low - 10_000) / 1001);
    process.env.KUBELET_TS_PORT_SLOT = `${slots - 1}/${slots}`;
    try {
      const { low: from, high: to } = portSlice(10_000, low);
      for (let p = from; p < to; p++) {
        const srv = createServer();
        const ok = await new Promise<boolean>((resolve) => {
          srv.once('error', () => resolve(false));
          srv.listen(p, '127.0.0.2', () => resolve(true));
        });
        if (ok) held.push(srv);
      }
      const port = await freePort();
      assert.ok(port < from || port >= to, `freePort returned ${port}, held on 127.0.0.2`);
    } finally {
      if (saved === undefined) delete process.env.KUBELET_TS_PORT_SLOT;
      else process.env.KUBELET_TS_PORT_SLOT = saved;
      await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
    }
  });

  it('gives side-by-side processes disjoint slices of the range (KUBELET_TS_PORT_SLOT=i/n)', () => {
    const slices = [0, 1, 2, 3].map((i) => portSlice(10_000, 32_768, `${i}/4`));
    assert.deepEqual(slices[0], { low: 10_000, high: 15_692 });
    for (let i = 1; i < 4; i++) assert.equal(slices[i].low, slices[i - 1].high, 'slices adjoin without overlap');
    assert.ok(slices[3].high <= 32_768);
    assert.deepEqual(portSlice(10_000, 32_768, ''), { low: 10_000, high: 32_768 }, 'no slot (an empty KUBELET_TS_PORT_SLOT): the whole range');
    assert.deepEqual(portSlice(10_000, 32_768, '4/4'), { low: 10_000, high: 32_768 }, 'a slot out of range: the whole range');
  });
});
