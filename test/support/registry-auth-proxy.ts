import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Basic auth in front of the test run's registry: what a private registry asks of a client
 * (401 with `WWW-Authenticate: Basic`, then the credentials on every request), so that image
 * pull secrets are tested through the real pull path (kubelet → CRI → containerd → HTTP)
 * while the run keeps one registry. Requests with the right credentials are forwarded as they
 * are (without them) to the registry; the answers come back untouched.
 */
export interface RegistryAuthProxy {
  /** `127.0.0.1:PORT`: the registry host of images pulled through the proxy. */
  host: string;
  /** Requests refused for missing or wrong credentials. */
  refused: number;
  close(): Promise<void>;
}

export async function startRegistryAuthProxy(registry: string, user: string, password: string): Promise<RegistryAuthProxy> {
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const [host, port] = registry.split(':') as [string, string];
  const state = { refused: 0 };
  const server = http.createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      state.refused++;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="kubelet-ts-test"', 'content-type': 'application/json', 'docker-distribution-api-version': 'registry/2.0' });
      res.end(JSON.stringify({ errors: [{ code: 'UNAUTHORIZED', message: 'authentication required' }] }));
      return;
    }
    const headers = { ...req.headers };
    delete headers.authorization;
    headers.host = registry;
    const upstream = http.request({ host, port: Number(port), method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(err.message);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxyPort = (server.address() as AddressInfo).port;
  return {
    host: `127.0.0.1:${proxyPort}`,
    get refused() {
      return state.refused;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
