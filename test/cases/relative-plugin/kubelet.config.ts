// Plugins given by path: relative paths resolve against this file's directory.
import { defineConfig } from 'kubelet-ts';

export default defineConfig({
  plugins: [
    './stub-runtime.ts',
    ['./greeter.ts', { greeting: 'hello from the config' }],
    ['./plugins/dir-plugin'],
  ],
});
