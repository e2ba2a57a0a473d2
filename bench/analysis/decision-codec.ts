// `npm run bench -- decision-codec`: CPU per decision of the log's two forms
// of a Decide (src/commit/decision-batch.ts), on this machine. The JSON form
// (one entry per decision) costs an encode on the leader and a checked decode
// at each follower's edge and at apply; the batch form does the same work in
// binary, once per batch. Measured in CPU time (process.cpuUsage), so a
// loaded machine slows it less than wall-clock figures.
import { checkedCommand } from '../../src/commit/command-check.ts';
import { decodeDecisionBatch, encodeDecisionBatch, type BatchCommand } from '../../src/commit/decision-batch.ts';
import { encodeCommand } from '../../src/commit/state.ts';

const decide = (i: number): BatchCommand => ({
  t: 'decide',
  txnId: `bench-w${i}-0192f3a4-5b6c-7d8e-9f00-${String(i).padStart(12, '0')}`,
  outcome: 'commit',
  reason: '',
  participants: ['p1', 'p2'],
  atMs: 1_796_099_999_736 + i,
});
const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const DECISIONS = 200_000;
const ROUNDS = 3;

for (const n of [1, 16, 256]) {
  const cmds = Array.from({ length: n }, (_, i) => decide(i));
  const batches = Math.floor(DECISIONS / n);
  let jsonNs = 0;
  let binaryNs = 0;
  // The last round counts: the first ones warm the JIT up.
  for (let round = 0; round < ROUNDS; round++) {
    let t = cpuUs();
    for (let b = 0; b < batches; b++) {
      for (const c of cmds) {
        const data = encodeCommand(c);
        checkedCommand(data);
        checkedCommand(data);
      }
    }
    jsonNs = ((cpuUs() - t) * 1000) / (batches * n);
    t = cpuUs();
    for (let b = 0; b < batches; b++) {
      const data = encodeDecisionBatch(cmds);
      decodeDecisionBatch(data);
      decodeDecisionBatch(data);
    }
    binaryNs = ((cpuUs() - t) * 1000) / (batches * n);
  }
  const jsonBytes = encodeCommand(cmds[0]).byteLength;
  const binaryBytes = encodeDecisionBatch(cmds).byteLength / n;
  console.log(
    JSON.stringify({
      decisionsPerEntry: n,
      jsonNsPerDecision: Math.round(jsonNs),
      binaryNsPerDecision: Math.round(binaryNs),
      jsonBytesPerDecision: jsonBytes,
      binaryBytesPerDecision: Number(binaryBytes.toFixed(1)),
    }),
  );
}
