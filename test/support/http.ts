import http from 'node:http';

/** A GET to loopback or to a pod the test created, bounded by a timeout; the body as text. */
export function httpGet(url: string, timeoutMs = 5000): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type'] ?? '') }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** A GET to a kubelet's local socket (`<rootDir>/kubelet-ts.sock`), bounded by a timeout; the body as text. */
export function socketGet(socketPath: string, path: string, timeoutMs = 5000): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type'] ?? '') }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} on ${socketPath} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}
