import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort } from '../../tools/node-env/util.ts';

describe('freePort (the ports test servers and the control plane bind)', () => {
  it('picks ports below the ephemeral range, where no outgoing connection takes them, never the same twice', async function () {
    if (process.platform !== 'linux') this.skip();
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
});
