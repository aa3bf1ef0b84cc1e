import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { dropUnknownFields, loadObjectModels, parseYamlDocument } from '../../objects/object-decoder.ts';
import { typeProblems } from '../../objects/validation/structural.ts';
import fs from 'node:fs/promises';
import type { ObjectSource } from '../../objects/object-source.ts';
import path from 'node:path';

/**
 * Standalone sources of configMap and secret volumes: v1 ConfigMap and Secret objects in
 * files under `localObjectsDir`, `configmaps/<namespace>/<name>.yaml` and
 * `secrets/<namespace>/<name>.yaml` (`.yml` and `.json` also work). Files are read on every
 * set-up, so an edit reaches running pods on their next sync.
 */
export class LocalObjects implements ObjectSource {
  constructor(private readonly dir: string | undefined) {}

  configMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
    return this.read<V1ConfigMap>('configmaps', 'ConfigMap', namespace, name);
  }

  secret(namespace: string, name: string): Promise<V1Secret | undefined> {
    return this.read<V1Secret>('secrets', 'Secret', namespace, name);
  }

  private async read<T extends { kind?: string; metadata?: { name?: string } }>(sub: string, kind: string, namespace: string, name: string): Promise<T | undefined> {
    if (!this.dir) return undefined;
    for (const ext of ['.yaml', '.yml', '.json']) {
      const file = path.join(this.dir, sub, namespace, `${name}${ext}`);
      let text: string;
      try {
        text = await fs.readFile(file, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      await loadObjectModels();
      let obj: T;
      try {
        obj = dropUnknownFields<T>(parseYamlDocument(text));
      } catch (err) {
        throw new Error(`${file}: not valid YAML or JSON: ${(err as Error).message}`);
      }
      if (!obj || typeof obj !== 'object' || (obj.kind !== undefined && obj.kind !== kind)) throw new Error(`${file}: not a v1 ${kind}`);
      // Values of the wrong type (YAML's `enabled: yes` is a boolean) are refused here, naming them, not met later as a TypeError.
      const problems = typeProblems(obj, `V1${kind}`);
      if (problems.length > 0) throw new Error(`${file}: invalid ${kind}: ${problems.join('; ')}`);
      return obj;
    }
    return undefined;
  }
}
