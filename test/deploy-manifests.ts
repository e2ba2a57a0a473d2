// The deployment files under deploy/, read for tests: the Kubernetes
// manifests (parsed as YAML, every document of every file the kustomization
// lists) and helpers to find one object by kind and name.
//
// The YAML parser is the `yaml` package and the schemas come from the
// `kubernetes-models` package, both found where require looks (so NODE_PATH
// can point at copies while they are not yet development dependencies).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const DEPLOY = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'deploy');
export const KUBERNETES = join(DEPLOY, 'kubernetes');

// biome-ignore lint/suspicious/noExplicitAny: manifests are untyped YAML; the tests check their shape.
export type Doc = Record<string, any>;

interface YamlModule {
  parseAllDocuments(text: string): { errors: { message: string }[]; toJS(): unknown }[];
  parse(text: string): unknown;
}

function yaml(): YamlModule {
  const require = createRequire(import.meta.url);
  try {
    return require('yaml') as YamlModule;
  } catch {
    throw new Error(
      'the `yaml` package is not installed: add it to devDependencies (or point NODE_PATH at a node_modules that has it)',
    );
  }
}

/** Every document of a YAML file; a syntax error throws, naming the file. */
export function readYamlDocs(path: string): Doc[] {
  const docs = yaml().parseAllDocuments(readFileSync(path, 'utf8'));
  const out: Doc[] = [];
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`${path}: ${d.errors.map((e) => e.message).join('; ')}`);
    const v = d.toJS();
    if (v !== null && v !== undefined) out.push(v as Doc);
  }
  return out;
}

export function readYaml(path: string): Doc {
  const docs = readYamlDocs(path);
  if (docs.length !== 1) throw new Error(`${path}: expected one YAML document, found ${docs.length}`);
  return docs[0];
}

/** The kustomization and every object of the files it lists, in order. */
export function kubernetesObjects(): { kustomization: Doc; objects: Doc[] } {
  const kustomization = readYaml(join(KUBERNETES, 'kustomization.yaml'));
  const objects = (kustomization.resources as string[]).flatMap((f) => readYamlDocs(join(KUBERNETES, f)));
  return { kustomization, objects };
}

export function findObject(objects: Doc[], kind: string, name: string): Doc {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name);
  if (o === undefined) throw new Error(`no ${kind} named ${name} in deploy/kubernetes`);
  return o;
}

/**
 * The directory of an installed package: looked for where require would
 * look (node_modules up the tree, then NODE_PATH), since an ESM-only package
 * with an exports map cannot be resolved through require.
 */
function packageDir(name: string): string {
  const require = createRequire(import.meta.url);
  for (const dir of require.resolve.paths(name) ?? [])
    if (existsSync(join(dir, name, 'package.json'))) return join(dir, name);
  throw new Error(
    `the \`${name}\` package is not installed: add it to devDependencies (or point NODE_PATH at a node_modules that has it)`,
  );
}

interface KubernetesModel {
  validate(): void;
}

/**
 * Validates `object` against the Kubernetes OpenAPI schema of its kind and
 * API version (the kubernetes-models package); throws naming the first
 * field that does not conform.
 */
export async function validateKubernetesObject(object: Doc): Promise<void> {
  // The package's folders are the API versions: v1, apps/v1, policy/v1.
  const file = join(packageDir('kubernetes-models'), object.apiVersion, `${object.kind}.js`);
  if (!existsSync(file)) throw new Error(`no schema for ${object.apiVersion} ${object.kind} (looked for ${file})`);
  const mod = (await import(pathToFileURL(file).href)) as Record<string, new (o: Doc) => KubernetesModel>;
  new mod[object.kind](object).validate();
}
