import assert from 'node:assert/strict';
import { PluginError } from '../../core/errors.ts';
import { pluginOfError, stackFiles } from '../../core/plugins/plugin-attribution.ts';

/** Which plugin a crash names (core/cli.ts): the one whose files the stack runs through. */
describe('plugin attribution of an uncaught error', function () {
  const plugins = [
    { name: 'probes', root: '/opt/kubelet-ts/plugins/probes' },
    { name: '@acme/gpu', root: '/etc/kubelet-ts/node_modules/@acme/gpu' },
    { name: 'acme-inner', root: '/etc/kubelet-ts/node_modules/@acme/gpu/node_modules/acme-inner' },
    { name: 'inline-policy', root: undefined },
  ];
  const errorWith = (...frames: string[]) => Object.assign(new Error('boom'), { stack: ['Error: boom', ...frames.map((f) => `    at ${f}`)].join('\n') });

  it('reads the files of V8 stack frames: paths, file URLs, async frames', function () {
    assert.deepEqual(stackFiles(errorWith('Timeout._onTimeout (/a/b.ts:3:9)', 'file:///c/d%20e.mjs:1:2', 'async run (file:///f/g.js:10:5)', 'listOnTimeout (node:internal/timers:573:17)').stack!), ['/a/b.ts', '/c/d e.mjs', '/f/g.js']);
  });

  it('names the plugin of the innermost frame under a plugin root (the deepest root), or none', function () {
    assert.equal(pluginOfError(errorWith('tick (/opt/kubelet-ts/core/util/x.ts:1:1)', 'probe (/opt/kubelet-ts/plugins/probes/manager.ts:9:3)'), plugins), 'probes');
    assert.equal(pluginOfError(errorWith('f (file:///etc/kubelet-ts/node_modules/@acme/gpu/node_modules/acme-inner/index.js:1:1)', 'g (/etc/kubelet-ts/node_modules/@acme/gpu/dist/index.js:2:2)'), plugins), 'acme-inner');
    assert.equal(pluginOfError(errorWith('h (/etc/kubelet-ts/node_modules/@acme/gpu-extra/index.js:1:1)'), plugins), undefined, 'a sibling package whose name starts the same is not it');
    assert.equal(pluginOfError(errorWith('tick (/opt/kubelet-ts/core/kubelet.ts:1:1)'), plugins), undefined);
    assert.equal(pluginOfError('a string', plugins), undefined);
  });

  it('names the plugin a PluginError names', function () {
    assert.equal(pluginOfError(new PluginError('csi-grpc', 'x'), plugins), 'csi-grpc');
  });
});
