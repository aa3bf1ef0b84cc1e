import { definePlugin, errorMessage, keyringLookup, STAGE, untilAborted, type ImageCredentialFailure, type ProvidedAuth } from 'kubelet-ts';
import { ExecCredentialProvider } from './exec-credential-provider.ts';
import { ProviderExecError } from './exec-provider.ts';
import { checkProviderBinaries, readCredentialProviderConfig } from './provider-config.ts';
import { optionsSchema, type CredentialProviderExecOptions } from './options-schema.ts';

/**
 * credential-provider-exec: upstream's exec image credential providers (KEP-2133, GA in 1.26).
 * The providers of the CredentialProviderConfig named by `imageCredentialProviderConfig`
 * (`--image-credential-provider-config`) run from `imageCredentialProviderBinDir`
 * (`--image-credential-provider-bin-dir`) when a pull needs credentials for an image they
 * match; their answers are cached as upstream caches them, and the credentials they give go to
 * the core through the `imageCredentials` hook, after the pod's pull secrets'. A provider that
 * fails, times out or answers garbage is a failure the core shows as one Warning event on the
 * pod; the pull goes on without its credentials and is retried with the pull back-off.
 *
 * In the default bundle: without `imageCredentialProviderConfig` it declines to load.
 */
export default definePlugin<CredentialProviderExecOptions>({
  name: 'credential-provider-exec',
  kind: 'other',
  optionsSchema,
  apply(ctx) {
    const configPath = ctx.config.imageCredentialProviderConfig;
    const binDir = ctx.config.imageCredentialProviderBinDir;
    if (!configPath) return ctx.skip('no imageCredentialProviderConfig (--image-credential-provider-config): no exec image credential providers');
    if (!binDir) throw new Error('imageCredentialProviderConfig is set but imageCredentialProviderBinDir (--image-credential-provider-bin-dir) is not');

    let providers: ExecCredentialProvider[] = [];
    // Reading the config is the start phase's: `kubelet-ts plugins` lists the plugin without it.
    ctx.onStart(async () => {
      const specs = await readCredentialProviderConfig(configPath);
      await checkProviderBinaries(binDir, specs);
      providers = specs.map((spec) => new ExecCredentialProvider(spec, { binDir }));
      ctx.logger.info({ config: configPath, binDir, providers: specs.map((s) => s.name) }, 'exec image credential providers ready');
    });

    ctx.hooks.imageCredentials.tapPromise({ name: 'credential-provider-exec', stage: STAGE.DEFAULT }, async (draft, request, hook) => {
      const matching = providers.filter((p) => p.matches(request.repository));
      if (matching.length === 0) return draft;
      const failures: ImageCredentialFailure[] = [];
      // Every matching provider is asked, in config order (upstream merges their answers into one keyring).
      const answers = await Promise.all(matching.map(async (p): Promise<ProvidedAuth | undefined> => {
        try {
          // A run is shared by the pods asking for the repository at once: one pod's sync giving up stops its wait, not the run.
          return { from: `credential provider "${p.name}"`, auth: await untilAborted(p.provide(request.repository), hook.signal, `credential provider ${p.name}`) };
        } catch (err) {
          // Given up on (the pod's sync, or hookTimeout): not the provider's failure.
          if (hook.signal.aborted) throw err;
          const stderr = err instanceof ProviderExecError ? err.stderr : undefined;
          ctx.logger.warn({ provider: p.name, image: request.repository, err: errorMessage(err), ...(stderr ? { stderr } : {}) }, 'image credential provider failed');
          failures.push({ provider: p.name, message: errorMessage(err) });
          return undefined;
        }
      }));
      const credentials = keyringLookup(request.repository, answers.filter((a): a is ProvidedAuth => a !== undefined));
      ctx.logger.debug({ image: request.repository, providers: matching.map((p) => p.name), credentials: credentials.length }, 'image credentials from exec providers');
      return { credentials: [...draft.credentials, ...credentials], failures: [...draft.failures, ...failures] };
    });
  },
});
