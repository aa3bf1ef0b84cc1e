// A CPU profile of a window of a running kubelet, not of its start: preloaded with
// `node --import bench/cpu-profile-window.mjs bin/kubelet-ts.mjs ...` (bench:steady does it with
// PROFILE=DIR). SIGUSR2 starts the profiler (node:inspector, in this process), the next SIGUSR2
// stops it and writes DIR/kubelet-<pid>-<n>.cpuprofile (Chrome DevTools format). `--cpu-prof`
// would profile the whole life, start and 110 pod starts included; this profiles what the
// benchmark's window sees.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.KTS_CPU_PROFILE_DIR ?? '.';
const interval = Number(process.env.KTS_CPU_PROFILE_INTERVAL_US ?? 1000);
let session;
let count = 0;

const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

process.on('SIGUSR2', () => {
  void (async () => {
    if (!session) {
      session = new Session();
      session.connect();
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval });
      await post('Profiler.start');
      return;
    }
    const { profile } = await post('Profiler.stop');
    session.disconnect();
    session = undefined;
    writeFileSync(path.join(dir, `kubelet-${process.pid}-${++count}.cpuprofile`), JSON.stringify(profile));
  })();
});
