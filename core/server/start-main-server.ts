/**
 * Builds the main server from the config: TLS (serving pair, client CA), the authenticator and
 * authorizer with their caches, the routes, the local socket; starts it, and says once at start
 * what cannot work in this mode (token and Webhook checks need an API server).
 */
import path from 'node:path';
import type { ApiClient } from '../apiserver/api-client.ts';
import type { Logger } from '../logger.ts';
import { RequestAuthenticator } from './authn.ts';
import { RequestAuthorizer } from './authz.ts';
import { mainRoutes, type KubeletRouteDeps } from './kubelet-routes.ts';
import { MainServer } from './main-server.ts';
import { loadServingTls } from './serving-tls.ts';

/** The local socket of kubelet-ts CLI commands, under the root dir. */
export function localSocketPath(rootDir: string): string {
  return path.join(rootDir, 'kubelet-ts.sock');
}

export async function startMainServer(deps: KubeletRouteDeps & { logger: Logger; apiClient: () => ApiClient | undefined; clusterSigned?: Parameters<typeof loadServingTls>[2] }): Promise<MainServer> {
  const { config } = deps;
  const logger = deps.logger.child({ component: 'main-server' });
  const tls = await loadServingTls(config, logger, deps.clusterSigned);
  const a = config.authentication;
  if (!config.kubeconfig) {
    if (config.authorization.mode === 'Webhook') {
      // The secure default working as meant, not a fault: info, so a new node's console stays quiet.
      logger.info('standalone: the main port refuses every request, as authorization mode Webhook needs an API server (set authorization.mode AlwaysAllow with client certificates to use it; kubelet-ts commands use the local socket)');
    } else if (!tls.clientCA && !a.anonymousEnabled) {
      logger.warn('standalone without authentication.x509.clientCAFile: no request to the main port can authenticate');
    }
  }
  const server = new MainServer({
    address: config.address,
    port: config.port,
    tls,
    socketPath: localSocketPath(config.rootDir),
    nodeName: config.nodeName,
    routes: mainRoutes(deps),
    authenticator: new RequestAuthenticator({
      x509: tls.clientCA !== undefined,
      webhook: a.webhookEnabled,
      cacheTtlMs: a.webhookCacheTTLMs,
      anonymous: a.anonymousEnabled,
      client: deps.apiClient,
      logger,
    }),
    authorizer: new RequestAuthorizer({
      mode: config.authorization.mode,
      cacheAuthorizedTtlMs: config.authorization.cacheAuthorizedTTLMs,
      cacheUnauthorizedTtlMs: config.authorization.cacheUnauthorizedTTLMs,
      client: deps.apiClient,
      logger,
    }),
    streamIdleTimeoutMs: config.streamingConnectionIdleTimeoutMs,
    serveTcp: config.enableServer,
    debuggingHandlers: config.enableDebuggingHandlers,
    logger,
  });
  await server.listen();
  return server;
}
