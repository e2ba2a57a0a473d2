// deploy/kubernetes: the manifests parse as YAML and have the structure a
// three-node cluster needs: kinds and API
// versions, selectors that match the pod labels, a headless service that
// publishes not-ready pods, named ports the probes and services use,
// every volume mounted and every mount backed by a volume, probes present,
// the ConfigMap's node config valid for each of the three nodes; and each
// object against the Kubernetes OpenAPI schema of its kind (kubernetes-models).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/node/config.ts';
import { DEPLOY, type Doc, findObject, kubernetesObjects, validateKubernetesObject } from '../deploy-manifests.ts';

const { kustomization, objects } = kubernetesObjects();
const sts = findObject(objects, 'StatefulSet', 'verdict');
const pod = sts.spec.template.spec as Doc;
const podLabels = sts.spec.template.metadata.labels as Record<string, string>;
const matches = (selector: Record<string, string>): boolean =>
  Object.entries(selector).every(([k, v]) => podLabels[k] === v);

describe('deploy/kubernetes', () => {
  it('the kustomization lists every manifest, each object with a known kind and API version', () => {
    expect(kustomization.kind).toBe('Kustomization');
    expect(kustomization.apiVersion).toBe('kustomize.config.k8s.io/v1beta1');
    const apiVersions: Record<string, string> = {
      StatefulSet: 'apps/v1',
      Service: 'v1',
      ConfigMap: 'v1',
      PodDisruptionBudget: 'policy/v1',
    };
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ConfigMap/verdict-config',
      'PodDisruptionBudget/verdict',
      'Service/verdict',
      'Service/verdict-client',
      'StatefulSet/verdict',
    ]);
    for (const o of objects) expect(o.apiVersion, `${o.kind}/${o.metadata.name}`).toBe(apiVersions[o.kind]);
  });

  it("every object conforms to the Kubernetes schema of its kind (kubernetes-models' OpenAPI schemas)", async () => {
    for (const o of objects) await validateKubernetesObject(o);
    // The check has teeth: a port that is not a number is refused.
    const broken = structuredClone(findObject(objects, 'StatefulSet', 'verdict'));
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'seven thousand';
    await expect(validateKubernetesObject(broken)).rejects.toThrow(/containerPort must be integer/);
  });

  it('the StatefulSet: three replicas started in parallel, stable names through the headless service, a volume claim per node', () => {
    expect(sts.spec.replicas).toBe(3);
    expect(sts.spec.podManagementPolicy).toBe('Parallel');
    expect(matches(sts.spec.selector.matchLabels)).toBe(true);
    const headless = findObject(objects, 'Service', sts.spec.serviceName);
    expect(headless.spec.clusterIP).toBe('None');
    expect(headless.spec.publishNotReadyAddresses).toBe(true);
    expect(sts.spec.volumeClaimTemplates.map((c: Doc) => c.metadata.name)).toEqual(['data']);
    expect(sts.spec.volumeClaimTemplates[0].spec.accessModes).toEqual(['ReadWriteOnce']);
  });

  it('runs as a non-root user, with the data directory on the volume', () => {
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    const node = pod.containers.find((c: Doc) => c.name === 'verdict');
    expect(node.volumeMounts.find((m: Doc) => m.name === 'data').mountPath).toBe('/var/lib/verdict');
    const config = JSON.parse(findObject(objects, 'ConfigMap', 'verdict-config').data['verdict.json']);
    expect(config.dataDir.startsWith('/var/lib/verdict/')).toBe(true);
  });

  it('every mount names a volume or claim, every volume is mounted, the config from the ConfigMap and TLS from the Secret', () => {
    const volumes = new Map<string, Doc>(pod.volumes.map((v: Doc) => [v.name, v]));
    const claims = new Set(sts.spec.volumeClaimTemplates.map((c: Doc) => c.metadata.name as string));
    const mounted = new Set<string>();
    for (const c of [...pod.initContainers, ...pod.containers]) {
      for (const m of c.volumeMounts) {
        expect(volumes.has(m.name) || claims.has(m.name), `${c.name} mounts ${m.name}`).toBe(true);
        mounted.add(m.name);
      }
    }
    for (const name of [...volumes.keys(), ...claims] as string[])
      expect(mounted.has(name), `volume ${name} is mounted`).toBe(true);
    expect(volumes.get('config')?.configMap.name).toBe('verdict-config');
    expect(volumes.get('tls')?.secret.secretName).toBe('verdict-tls');
    expect(findObject(objects, 'ConfigMap', volumes.get('config')?.configMap.name).kind).toBe('ConfigMap');
  });

  it('ports are named and the services and probes use them; readiness and liveness probes are present', () => {
    const node = pod.containers.find((c: Doc) => c.name === 'verdict');
    const ports = new Map<string, number>(node.ports.map((p: Doc) => [p.name, p.containerPort]));
    expect(Object.fromEntries(ports)).toEqual({ grpc: 7001, metrics: 9101 });
    for (const svc of objects.filter((o) => o.kind === 'Service')) {
      expect(matches(svc.spec.selector), `${svc.metadata.name} selects the pods`).toBe(true);
      for (const p of svc.spec.ports) expect(ports.has(p.targetPort), `${svc.metadata.name} port ${p.name}`).toBe(true);
    }
    expect(node.readinessProbe.exec.command.join(' ')).toMatch(/verdict status --endpoints 127\.0\.0\.1:7001/);
    expect(ports.has(node.livenessProbe.tcpSocket.port)).toBe(true);
    const config = JSON.parse(findObject(objects, 'ConfigMap', 'verdict-config').data['verdict.json']);
    expect(config.listen.endsWith(`:${ports.get('grpc')}`)).toBe(true);
    expect(config.metricsListen.endsWith(`:${ports.get('metrics')}`)).toBe(true);
  });

  it('the PodDisruptionBudget keeps a majority: at most one node down, selecting the pods', () => {
    const pdb = findObject(objects, 'PodDisruptionBudget', 'verdict');
    expect(pdb.spec.maxUnavailable).toBe(1);
    expect(matches(pdb.spec.selector.matchLabels)).toBe(true);
  });

  it("the ConfigMap's verdict.json is a valid config for each pod, its peers naming the pods through the headless service", () => {
    const cm = findObject(objects, 'ConfigMap', 'verdict-config');
    const raw = JSON.parse(cm.data['verdict.json']);
    for (let ordinal = 0; ordinal < 3; ordinal++) {
      const nodeId = `n${ordinal + 1}`;
      const cfg = parseConfig(raw, 'verdict.json', {
        env: {
          VERDICT_NODE_ID: nodeId,
          VERDICT_TLS_CERT: `/etc/verdict/tls/${nodeId}.crt`,
          VERDICT_TLS_KEY: `/etc/verdict/tls/${nodeId}.key`,
        },
      });
      expect(cfg.peers.get(nodeId)).toBe(`verdict-${ordinal}.${sts.spec.serviceName}:7001`);
      expect(cfg.tls?.cert).toBe(`/etc/verdict/tls/${nodeId}.crt`);
    }
    expect(cm.data['node-env.sh']).toContain('VERDICT_NODE_ID="n$((ordinal + 1))"');
  });

  it('the image and the systemd unit: a non-root user, the data directory a volume', () => {
    const image = readFileSync(join(DEPLOY, 'Containerfile'), 'utf8');
    expect(image.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(image).toMatch(/^USER 10001/m);
    expect(image).toMatch(/^VOLUME \["\/var\/lib\/verdict"\]/m);
    expect(image).toMatch(/^HEALTHCHECK /m);
    // The node's optional peer packages stay in the pruned production tree (README, Install).
    expect(image).toMatch(/npm prune --omit=dev[\s\S]*npm install --save-prod[\s\S]*'level', 'pino', 'prom-client'/);
    // The build context leaves out what the build stage makes itself (a host's node_modules would shadow npm ci's).
    const ignored = readFileSync(join(DEPLOY, '..', '.dockerignore'), 'utf8').split('\n');
    for (const p of ['node_modules', 'dist', '.git', 'data', 'certs']) expect(ignored).toContain(p);
    const unit = readFileSync(join(DEPLOY, 'systemd', 'verdict@.service'), 'utf8');
    expect(unit).toMatch(/^User=verdict$/m);
    expect(unit).toMatch(/^ExecStart=.* node --config \/etc\/verdict\/%i\.json$/m);
  });
});
