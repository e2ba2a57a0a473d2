// The conformance suite's TLS phase: a second participant process under
// mutual TLS, with a CA, node certificates and impostors made for the run.
import * as grpc from '@grpc/grpc-js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { TestCa } from '../tls-certs.ts';
import { FakeCluster, Leader } from './driver.ts';
import type { Target, TargetEnv } from './target.ts';
import { CHECKS, type Run, Subject, SETTLE_MS, eventually, expectCode, expectThat, show } from './check-kit.ts';
import { statusName } from './driver.ts';

export async function tlsPhase(
  target: Target,
  o: { root: string; clusterId: string; id: string; listen: string; probe: string },
  run: Run,
  stops: (() => Promise<void> | void)[],
): Promise<void> {
  const dir = join(o.root, 'certs');
  mkdirSync(dir, { recursive: true });
  const ca = TestCa.create(dir, 'conformance-ca');
  const nodes = { n1: ca.node('n1', o.clusterId) };
  const mine = ca.issue(o.id, { ou: o.clusterId });
  const notNode = ca.issue('n1', { ou: o.clusterId, file: 'not-a-node' });
  const otherCluster = ca.node('n1', 'another-cluster', 'other-cluster-node');
  const cluster = await FakeCluster.start({ clusterId: o.clusterId, nodeIds: ['n1'], tls: { ca: ca.cert, nodes } });
  stops.push(() => cluster.close());
  const env: TargetEnv = {
    clusterId: o.clusterId,
    participantId: o.id,
    nodes: [cluster.nodes[0].address],
    listen: o.listen,
    dataDir: join(o.root, 'tls'),
    probe: o.probe,
    tls: { ca: ca.cert, ...mine },
  };
  const s = new Subject(target, env, cluster, { ca: ca.cert, ...nodes.n1 });
  stops.push(() => s.stop());
  await target.setup?.(env);
  await s.start();
  const as = (identity: { ca: string; cert?: string; key?: string }): Leader => {
    const l = new Leader(o.listen, o.clusterId, o.id, identity);
    stops.push(() => l.close());
    return l;
  };
  const C = CHECKS.tls;
  await run(C.node, async () => {
    const t = s.txn('tls');
    // A node may be refused until the participant has learned the cluster's members: bounded.
    await eventually(
      'a YES to a node of the cluster',
      SETTLE_MS,
      async () => (await s.leader.prepare(t, s.write(`k-${t}`, 'tls'))).body?.vote === 'VOTE_YES',
    );
    expectCode(await s.leader.decide(t, true), grpc.status.OK, 'COMMIT from the node');
    await s.expectValue(`k-${t}`, 'tls', 'committed');
  });
  await run(C.served, async () => {
    expectThat(
      s.leader.servedSubject?.CN === o.id,
      `the participant's certificate names ${JSON.stringify(s.leader.servedSubject)}`,
    );
    expectThat(cluster.registrationsOf(o.id).length > 0, 'no registration over TLS');
  });
  const refusedBy = async (l: Leader, what: string, tlsRefusal: boolean): Promise<void> => {
    const t = s.txn('tls-no');
    const p = await l.prepare(t, s.write(`k-${t}`, 'v'), {}, 5_000);
    const allowed = [
      grpc.status.PERMISSION_DENIED,
      grpc.status.UNAUTHENTICATED,
      ...(tlsRefusal ? [grpc.status.UNAVAILABLE] : []),
    ];
    expectThat(
      allowed.includes(p.code),
      `PREPARE from ${what}: expected ${allowed.map(statusName).join(' or ')}, got ${show(p)}`,
    );
    const d = await l.decide(t, false);
    expectThat(allowed.includes(d.code), `DECISION from ${what}: got ${show(d)}`);
    const st = await l.status(t);
    expectThat(allowed.includes(st.code), `Status from ${what}: got ${show(st)}`);
    const x = await l.exchange([[{ id: 1, prepare: l.prepareRequest(t, s.write(`k-${t}`, 'v')) }]], 5_000);
    expectThat(
      x.answers.length === 0 && x.code !== grpc.status.OK,
      `an Exchange stream from ${what}: ${x.answers.length} answers, ${statusName(x.code)}`,
    );
    // Nothing was prepared: a node's COMMIT of it is refused.
    expectCode(
      await s.leader.decide(t, true),
      grpc.status.FAILED_PRECONDITION,
      `a node's COMMIT of the transaction ${what} tried to prepare`,
    );
  };
  await run(C.noCert, () => refusedBy(as({ ca: ca.cert }), 'a caller without a certificate', true));
  await run(C.notNode, () => refusedBy(as({ ca: ca.cert, ...notNode }), 'a certificate without the node mark', false));
  await run(C.otherCluster, () => refusedBy(as({ ca: ca.cert, ...otherCluster }), 'a node of another cluster', false));
}
