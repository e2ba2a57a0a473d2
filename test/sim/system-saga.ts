// Sagas in the whole-system simulator, beside commits: every node runs the
// production saga core (src/saga/saga-core.ts), attached to its node core by
// the node's own composition (src/node/products.ts attachProducts) over the
// same log as its CoordinatorEngine, on the world's clock; every
// participant process also serves saga steps through the production
// SagaInbox over a simulated journal (a crash loses its unsynced writes), and
// saga clients start sagas and wait for their end with the SDK's semantics
// (the same id again on any doubt). The faults are the world's own.
//
// After healing the world must become quiet: every saga FINISHED or
// COMPENSATED and its end acknowledged by its step services. Then the
// journals, which keep every record ever made durable, are held against the
// rules:
//   exactly once     no effect (an action or a compensation that ran) twice
//   finished         every action ran once, nothing compensated
//   compensated      every action that ran is compensated, in reverse order;
//                    no compensation ran without its action (empty ones are recorded);
//                    nothing after the pivot ran or was compensated
//   no hanging act   no action ran after its step's compensation was recorded
//   clients          the end a client saw is the end the log keeps
//   step order       actions ran in the order of their steps
//   decided          once the log decided a saga (COMPENSATING or FINISHED),
//                    no step still pending then ever ran its action
//   placement        with decision groups (SystemScenario.groups = G > 1)
//                    a saga is started, run and decided only in group
//                    groupOf(sagaId, G): no other group's engine calls its
//                    steps and no other group's log holds it
//
// Mutants are injected here, from test code: a new key on a retried call, a
// table that compensates after the pivot, a start answered without its log
// write, an inbox without empty compensations, an inbox that lets an action
// run after its compensation, a client that starts every saga in group 0, an
// orchestrator that calls a step the log never reached once it compensates.

import fc from 'fast-check';
import {
  EndSagasUnsupported,
  SagaEngine,
  type SagaEngineConfig,
  type SagaEngineIO,
  type StepAnswer,
  type StepRequest,
} from '../../src/saga/engine.ts';
import type { SagaCore } from '../../src/saga/saga-core.ts';
import { SagaInbox, type InboxRecord, type StepHandler } from '../../src/saga/inbox.ts';
import { isTerminal, SagaTable, type SagaRecord, type SagaState, type SagaStepDef } from '../../src/saga/state.ts';
import { Rng } from '../../src/raft/rng.ts';
import type { NodeStateMachine } from '../../src/node/machine.ts';
import { nodeProducts, type NodeProducts } from '../../src/node/products.ts';
import { systemScenarioArb } from './system-schedule.ts';
import { SimJournal } from './system-participant.ts';
import { DEAD, redirect, RETRYABLE, type Inc, type RpcError } from './system-rpc.ts';
import { SystemWorld, type SimProductsWiring, type SystemScenario, type WorldExtension } from './system-world.ts';

export type SagaMutant =
  | 'saga-new-key-on-retry'
  | 'saga-compensate-after-pivot'
  | 'saga-start-unlogged'
  | 'inbox-no-empty-compensation'
  | 'inbox-hanging-action'
  | 'saga-misrouted-client'
  | 'saga-act-after-decision';

export interface SagaStepPlan {
  /** Step service: a participant index, modulo their number. */
  service: number;
  /** The action answers FAILED (only at or before the pivot; later steps never refuse). */
  fail: boolean;
  /** Transient errors the action answers before it runs, per incarnation of its service. */
  errors: number;
  /** Transient errors its compensation answers first. */
  compErrors: number;
}

export interface SagaPlan {
  atMs: number;
  steps: SagaStepPlan[];
  /** Index into steps, modulo their number, or null. */
  pivot: number | null;
}

export interface SagaScenario extends SystemScenario {
  sagas: SagaPlan[];
  sagaMutant?: SagaMutant;
  /** The orchestrator's settings over SAGA_CONFIG (system-saga-attempts.sim.test.ts sets its own bounds). */
  sagaConfig?: Partial<SagaEngineConfig>;
}

const SAGA_CONFIG: Partial<SagaEngineConfig> = {
  retryMinMs: 100,
  retryMaxMs: 1_000,
  rpcTimeoutMs: 1_000,
  actionAttemptsMax: 4,
  actionAbandonAfterMs: 500,
  stuckAfterAttempts: 5,
  endedDelayMs: 200,
};
const CLIENT_DEADLINE_MS = 1_000;
const POLL_MS = 200;

/** What the log decided for a saga, the first time a replica applied it: its state then and the steps not reached. */
interface Decided {
  state: SagaState;
  group: number;
  pending: number[];
}

/**
 * The production table, telling the world when a replica of `group` applies the decision of a saga (running to
 * COMPENSATING or FINISHED), with the steps still pending then.
 */
class ObservedSagaTable extends SagaTable {
  constructor(
    readonly group: number,
    private readonly decided: (sagaId: string, d: Decided) => void,
  ) {
    super();
  }

  override apply(cmd: Parameters<SagaTable['apply']>[0], index: number): ReturnType<SagaTable['apply']> {
    const before = cmd.t === 'saga.ended' ? undefined : this.sagas.get(cmd.sagaId)?.state;
    const r = super.apply(cmd, index);
    const s = r.saga;
    if (
      s !== null &&
      (before === 'running' || (before === undefined && cmd.t === 'saga.start')) &&
      s.state !== 'running'
    )
      this.decided(s.id, {
        state: s.state,
        group: this.group,
        pending: s.status.flatMap((st, k) => (st === 'pending' ? [k] : [])),
      });
    return r;
  }
}

/** The table with the pivot rule broken: every step may be compensated. */
class CompensateAfterPivotTable extends ObservedSagaTable {
  override compensatable(): boolean {
    return true;
  }
}

/** The saga table beside the decision table in a node's state machine. */
function sagasOf(sm: NodeStateMachine): SagaTable {
  const t = sm.products.find((p): p is SagaTable => p instanceof SagaTable);
  if (!t) throw new Error('the node state machine holds no saga table');
  return t;
}

/** The inbox with its empty-compensation rule broken: a compensation runs its effect whether or not the action ran. */
class NoEmptyCompensationInbox extends SagaInbox {
  protected override compensationEmpty(): boolean {
    return false;
  }
}

/** The inbox with its no-hanging-action rule broken: an action runs even after its compensation was recorded. */
class HangingActionInbox extends SagaInbox {
  protected override actionRefused(): boolean {
    return false;
  }
}

/** A journal record with the order in which it was written, across every step service. */
type Seqd = InboxRecord & { seq: number };

interface StepService {
  id: string;
  journal: SimJournal<Seqd>;
  inbox: SagaInbox | null;
  inc: Inc;
  /** key → transient errors answered in this incarnation. */
  errorsGiven: Map<string, number>;
}

interface SagaClient {
  id: string;
  plan: SagaPlan;
  steps: SagaStepDef[];
  pivot: number | null;
  hint: number;
  started: boolean;
  /** The end this client saw. */
  end: SagaState | null;
}

/** A node as the saga clients reach it: its incarnation, and the saga core its process runs. */
interface NodeSide {
  inc: Inc;
  sagas: SagaCore;
}

export class SagaExtension implements WorldExtension {
  private readonly services = new Map<string, StepService>();
  private readonly clients: SagaClient[] = [];
  /** The incarnation of each node, by index, as its products were last wired. */
  private readonly nodes = new Map<number, { inc: Inc }>();
  private seq = 0;
  private readonly rng: Rng;
  sagasFinished = 0;
  sagasCompensated = 0;
  stuckFlagged = 0;
  /** Step calls the engines made, by key, and the leaderships (node and term) that made them. */
  readonly callsByKey = new Map<string, { calls: number; leaderships: Set<string> }>();
  /** Times a node's engine became leader. */
  leaderships = 0;
  /** Each saga's decision, as the first replica to apply it saw it. */
  private readonly decided = new Map<string, Decided>();

  /** End notices as they went out: EndSagas calls (and the sagas they carried), single End calls. */
  readonly endCalls = { batches: 0, batchedSagas: 0, singles: 0 };

  constructor(
    private readonly w: SystemWorld,
    private readonly sc: SagaScenario,
  ) {
    // A generator of its own, so that the world's draws stay the world's.
    this.rng = new Rng((sc.seed ^ 0x5a6a) >>> 0);
    for (const id of Array.from({ length: sc.participants }, (_, i) => `p${i + 1}`))
      this.services.set(id, {
        id,
        journal: new SimJournal<Seqd>(w.q, new Rng(this.rng.u32())),
        inbox: null,
        inc: DEAD,
        errorsGiven: new Map(),
      });
  }

  // ---- nodes --------------------------------------------------------------

  /**
   * The node's product tables; under the pivot mutant, a saga table that breaks the pivot rule (snapshots restore into
   * it as into the real one).
   */
  products(group: number): NodeProducts {
    const decided = (sagaId: string, d: Decided): void => this.noteDecided(sagaId, d);
    return nodeProducts(
      this.sc.sagaMutant === 'saga-compensate-after-pivot'
        ? new CompensateAfterPivotTable(group, decided)
        : new ObservedSagaTable(group, decided),
    );
  }

  /** The group a saga is placed in: groupOf(sagaId, G) (0 without groups). */
  private groupOf(sagaId: string): number {
    return this.w.groupOf(sagaId);
  }

  private noteDecided(sagaId: string, d: Decided): void {
    const placed = this.groupOf(sagaId);
    if (d.group !== placed)
      this.w.checker.violation(
        `placement: saga ${sagaId} decided ${d.state} in group ${d.group}, placed in group ${placed}`,
      );
    const first = this.decided.get(sagaId);
    if (first === undefined) this.decided.set(sagaId, d);
    else if (first.state !== d.state)
      this.w.checker.violation(
        `sagas: ${sagaId} decided ${first.state} in group ${first.group} and ${d.state} in group ${d.group}`,
      );
  }

  /**
   * What a node's saga core is wired to: the step services over the
   * simulated network, this world's settings and a generator of its own.
   * The core itself is the production one, attached to the node's core by
   * src/node/products.ts (SysNode.sagas); only the start-unlogged mutant
   * builds its orchestrator, over the same I/O with its log write skipped.
   */
  nodeProducts(node: { id: string; index: number; group: number }, inc: Inc): SimProductsWiring {
    const random = new Rng(this.rng.u32());
    const mutant = this.sc.sagaMutant;
    let term = 0;
    this.nodes.set(node.index, { inc });
    return {
      random: () => random.float(),
      steps: {
        callStep: (to, req, timeoutMs, cb) => {
          if (!inc.alive) return;
          if (this.groupOf(req.sagaId) !== node.group)
            this.w.checker.violation(
              `placement: group ${node.group}'s saga engine on ${node.id} calls ${req.key}, placed in group ${this.groupOf(req.sagaId)}`,
            );
          const made = this.callsByKey.get(req.key) ?? { calls: 0, leaderships: new Set<string>() };
          made.calls++;
          made.leaderships.add(`${node.id}@${term}`);
          this.callsByKey.set(req.key, made);
          const sent =
            mutant === 'saga-new-key-on-retry' && req.attempt > 1 ? { ...req, key: `${req.key}#${req.attempt}` } : req;
          this.w.log(() => `${node.id} calls ${to.id} ${req.key} attempt ${req.attempt}`);
          this.callStep(node.id, inc, to.id, sent, timeoutMs, cb);
          if (mutant === 'saga-act-after-decision' && req.kind === 'compensate')
            this.actAfterDecision(node.id, inc, req);
        },
        endSaga: (to, sagaId, timeoutMs, cb) => {
          if (!inc.alive) return;
          this.endCalls.singles++;
          this.w.rpc.call<true>(
            node.id,
            inc,
            to.id,
            timeoutMs,
            (reply) => {
              const s = this.services.get(to.id);
              if (!s?.inbox) return;
              const sInc = s.inc;
              s.inbox.end(
                sagaId,
                (err) => sInc.alive && reply(err ? { code: 'UNAVAILABLE', message: err.message } : null, true),
              );
            },
            (err) => cb(err ? new Error(err.message) : null),
          );
        },
        endSagas: (to, sagaIds, timeoutMs, cb) => {
          if (!inc.alive) return;
          this.endCalls.batches++;
          this.endCalls.batchedSagas += sagaIds.length;
          this.w.rpc.call<string[]>(
            node.id,
            inc,
            to.id,
            timeoutMs,
            (reply) => {
              const s = this.services.get(to.id);
              if (!s?.inbox) return;
              // A step service from before EndSagas answers UNIMPLEMENTED; the engine falls back to End.
              if (this.oldStepService(to.id))
                return reply({ code: 'UNIMPLEMENTED', message: `${to.id} does not serve EndSagas` });
              const sInc = s.inc;
              s.inbox.endMany(
                sagaIds,
                (err, ended) => sInc.alive && reply(err ? { code: 'UNAVAILABLE', message: err.message } : null, ended),
              );
            },
            (err, ended) =>
              err
                ? cb(err.code === 'UNIMPLEMENTED' ? new EndSagasUnsupported(err.message) : new Error(err.message))
                : cb(null, ended),
          );
        },
      },
      options: {
        saga: { ...SAGA_CONFIG, ...this.sc.sagaConfig },
        observeSagas: {
          leadership: (t) => {
            if (t > 0 && t !== term) this.leaderships++;
            term = t;
          },
          stuckFlagged: () => this.stuckFlagged++,
        },
        newSagaEngine:
          mutant === 'saga-start-unlogged'
            ? (table, services, io, cfg) =>
                new SagaEngine(table, services, this.startUnlogged(node.id, inc, io, services), cfg)
            : undefined,
      },
    };
  }

  /**
   * The act-after-decision mutant: beside a compensation, the action of the first step the log had not reached when it
   * decided the saga, as an orchestrator that runs on after its decision would call it.
   */
  private actAfterDecision(from: string, inc: Inc, req: StepRequest): void {
    const k = this.decided.get(req.sagaId)?.pending[0];
    const c = this.clients.find((x) => x.id === req.sagaId);
    const step = k === undefined ? undefined : c?.steps[k];
    if (k === undefined || step === undefined) return;
    const act: StepRequest = {
      ...req,
      step: k,
      kind: 'action',
      key: `${req.sagaId}/${k}/action`,
      name: step.name,
      input: step.input,
      attempt: 1,
    };
    this.callStep(from, inc, step.service, act, 1_000, () => {});
  }

  /**
   * Step service p1 is one from before EndSagas in every schedule of odd seed (its End calls come one saga at a time),
   * so the fallback runs beside the batches without a draw of its own.
   */
  private oldStepService(id: string): boolean {
    return id === 'p1' && this.sc.seed % 2 === 1;
  }

  /** The start-unlogged mutant's I/O: a start is answered, and step 0 called, with nothing in the log. */
  private startUnlogged(
    nodeId: string,
    inc: Inc,
    io: SagaEngineIO,
    services: ReadonlyMap<string, { id: string }>,
  ): SagaEngineIO {
    return {
      ...io,
      propose: (cmd, cb) => {
        if (cmd.t !== 'saga.start') return io.propose(cmd, cb);
        const rec: SagaRecord = {
          id: cmd.sagaId,
          owner: cmd.owner ?? '',
          steps: cmd.steps,
          pivot: cmd.pivot,
          state: 'running',
          status: [],
          outputs: [],
          startedAtMs: cmd.atMs,
          endedAtMs: null,
          stuck: null,
          ended: false,
          timeline: [],
          index: 0,
        };
        const to = services.get(cmd.steps[0].service);
        if (to)
          this.callStep(
            nodeId,
            inc,
            to.id,
            {
              sagaId: cmd.sagaId,
              step: 0,
              kind: 'action',
              key: `${cmd.sagaId}/0/action`,
              name: cmd.steps[0].name,
              input: cmd.steps[0].input,
              outputs: [],
              attempt: 1,
            },
            1_000,
            () => {},
          );
        cb(null, {
          t: 'product',
          product: 'saga',
          op: 'saga.start',
          sagaId: cmd.sagaId,
          saga: rec,
          changed: true,
          problem: null,
        });
      },
    };
  }

  private callStep(
    from: string,
    inc: Inc,
    to: string,
    req: StepRequest,
    timeoutMs: number,
    cb: (err: Error | null, a?: StepAnswer) => void,
  ): void {
    this.w.rpc.call<StepAnswer>(
      from,
      inc,
      to,
      timeoutMs,
      (reply) => {
        const s = this.services.get(to);
        if (!s?.inbox) return;
        const sInc = s.inc;
        s.inbox.handle(
          req,
          (r) => this.handler(s, r),
          (err, a) => sInc.alive && reply(err ? { code: 'UNAVAILABLE', message: err.message } : null, a),
        );
      },
      (err, a) => (err ? cb(new Error(err.message)) : cb(null, a)),
    );
  }

  /** The applied saga table of the leader at the end (for properties over the records). */
  finalTable(): SagaTable | null {
    const sm = this.w.leader()?.sm;
    return sm ? sagasOf(sm) : null;
  }

  /** The step's business: the plan says whether it refuses and how often it errors first. */
  private handler(s: StepService, req: StepRequest): ReturnType<StepHandler> {
    const c = this.clients.find((x) => x.id === req.sagaId);
    const p = c?.plan.steps[req.step];
    if (!c || !p) return { status: 'failed', reason: 'no such saga in the plan' };
    const given = s.errorsGiven.get(req.key) ?? 0;
    if (given < (req.kind === 'action' ? p.errors : p.compErrors)) {
      s.errorsGiven.set(req.key, given + 1);
      throw new Error(`transient error ${given + 1} at ${s.id}`);
    }
    const compensatable = c.pivot === null || req.step <= c.pivot;
    if (req.kind === 'action' && p.fail && compensatable) return { status: 'failed', reason: 'refused by the plan' };
    return { status: 'done', output: `${s.id}:${req.key}`, effect: `${req.kind}:${req.sagaId}:${req.step}` };
  }

  // ---- step service processes ride the participants' ---------------------

  participantStarted(id: string): void {
    const s = this.services.get(id);
    if (!s) return;
    const inc: Inc = { alive: true };
    s.inc = inc;
    s.errorsGiven = new Map();
    const journal = {
      append: (r: InboxRecord, cb: (err: Error | null) => void): void => {
        if (!inc.alive) return;
        s.journal.append({ ...r, seq: ++this.seq }, cb);
      },
    };
    const m = this.sc.sagaMutant;
    const Inbox =
      m === 'inbox-no-empty-compensation'
        ? NoEmptyCompensationInbox
        : m === 'inbox-hanging-action'
          ? HangingActionInbox
          : SagaInbox;
    s.inbox = new Inbox(journal).replay(s.journal.durable);
  }

  participantCrashed(id: string): void {
    const s = this.services.get(id);
    if (!s) return;
    s.inc.alive = false;
    s.inbox = null;
    s.journal.crash();
  }

  // ---- saga clients ---------------------------------------------------------

  start(t0: number): void {
    const ids = this.w.participantIds;
    for (const [i, plan] of this.sc.sagas.entries()) {
      const steps = plan.steps.map((p, k) => ({
        service: ids[p.service % ids.length],
        name: `step${k}`,
        input: `in${k}`,
      }));
      const pivot = plan.pivot === null ? null : plan.pivot % steps.length;
      const c: SagaClient = {
        id: `s${i + 1}`,
        plan,
        steps,
        pivot,
        hint: this.rng.int(this.w.nodes.length),
        started: false,
        end: null,
      };
      this.clients.push(c);
      this.w.q.at(t0 + plan.atMs, () => this.clientStart(c));
    }
  }

  /** Node `index`'s saga core of group g, while up. */
  private side(index: number, g: number): NodeSide | null {
    const n = this.w.nodes[index];
    const wired = this.nodes.get(index);
    const sagas = n.up ? (n.groups[g]?.sagas ?? null) : null;
    return sagas !== null && wired?.inc.alive ? { inc: wired.inc, sagas } : null;
  }

  /** The group a client sends its saga's calls to: the saga's own (group 0 under the misrouting mutant). */
  private clientGroup(c: SagaClient): number {
    return this.sc.sagaMutant === 'saga-misrouted-client' ? 0 : this.groupOf(c.id);
  }

  /** The leader's saga table of group g, once no up node of the group has moved past it. */
  private tableOf(g: number): SagaTable | null {
    const l = this.w.currentLeader(g);
    return l ? sagasOf(l.rep.sm) : null;
  }

  private clientStart(c: SagaClient): void {
    this.w.rpc.call<true>(
      c.id,
      { alive: true },
      this.w.nodes[c.hint].id,
      CLIENT_DEADLINE_MS,
      (reply) => {
        const g = this.clientGroup(c);
        const side = this.side(c.hint, g);
        if (!side) return;
        const inc = side.inc;
        side.sagas.start(c.id, c.steps, c.pivot, (err) => {
          if (!inc.alive) return;
          if (!err) return reply(null, true);
          const code =
            err.code === 'not-leader' ? 'not-leader' : err.code === 'outcome-unknown' ? 'outcome-unknown' : err.code;
          reply({
            code,
            message: err.message,
            leader: err.code === 'not-leader' ? this.w.nodes[c.hint].groups[g]?.core.driver.leader() : undefined,
          });
        });
      },
      (err) => {
        this.w.log(() => `saga client ${c.id} start: ${err ? `${err.code} ${err.message}` : 'started'}`);
        if (err) {
          if (!RETRYABLE.has(err.code))
            return this.w.checker.violation(`saga client: start(${c.id}) refused: ${err.code}: ${err.message}`);
          c.hint = redirect(c.hint, err, this.w.nodeIds);
          return this.w.q.after(100, () => this.clientStart(c));
        }
        c.started = true;
        this.w.q.after(POLL_MS, () => this.poll(c));
      },
    );
  }

  /**
   * Status from whichever node the client reaches (its applied table), until
   * the saga ends. A leader's engine leads only once it applied an entry of
   * its term, so its table holds every start that was acknowledged: a leader
   * without the record of an acknowledged start is a violation.
   */
  private poll(c: SagaClient): void {
    this.w.rpc.call<{ state: SagaState | null; leader: boolean }>(
      c.id,
      { alive: true },
      this.w.nodes[c.hint].id,
      CLIENT_DEADLINE_MS,
      (reply) => {
        const side = this.side(c.hint, this.clientGroup(c));
        if (!side) return;
        reply(null, { state: side.sagas.table.sagas.get(c.id)?.state ?? null, leader: side.sagas.isLeader() });
      },
      (err: RpcError | null, a) => {
        if (!err && a?.state && isTerminal(a.state)) {
          c.end = a.state;
          this.w.log(() => `saga client ${c.id} sees ${a.state}`);
          return;
        }
        if (!err && a?.state === null && a.leader) {
          // Reported once; the client stops waiting so that the run ends with this finding.
          c.end = 'compensated';
          return this.w.checker.violation(
            `sagas: ${c.id} was acknowledged as started, but the leader's log has no record of it`,
          );
        }
        // A follower may not have applied the start yet; the leader has.
        if (err || a?.state === null) c.hint = redirect(c.hint, err, this.w.nodeIds);
        this.w.q.after(POLL_MS, () => this.poll(c));
      },
    );
  }

  // ---- the end -------------------------------------------------------------

  quiet(): string | null {
    const pending: string[] = [];
    const waiting = this.clients.filter((c) => c.end === null).map((c) => c.id);
    if (waiting.length > 0) pending.push(`saga clients waiting: ${waiting.join(' ')}`);
    for (const s of this.services.values()) if (!s.inbox) pending.push(`step service ${s.id} down`);
    for (let g = 0; g < this.w.groups; g++) {
      const l = this.w.currentLeader(g);
      if (l === null) continue;
      const open = [...sagasOf(l.rep.sm).sagas.values()]
        .filter((s) => !isTerminal(s.state) || !s.ended)
        .map((s) => `${s.id}:${s.state}${s.ended ? '' : ' (end not acknowledged)'}`);
      const ofGroup = this.w.groups === 1 ? '' : ` (group ${g})`;
      if (open.length > 0) pending.push(`sagas not ended on ${l.n.id}${ofGroup}: ${open.join(' ')}`);
    }
    return pending.length === 0 ? null : pending.join('; ');
  }

  final(): void {
    const v = (what: string): void => this.w.checker.violation(what);
    const tables = Array.from({ length: this.w.groups }, (_, g) => this.tableOf(g));
    const noLeader = tables.flatMap((t, g) => (t === null ? [g] : []));
    if (noLeader.length > 0) return v(`sagas: no leader at the end in group ${noLeader.join(', ')}`);
    const records: Seqd[] = [];
    for (const s of this.services.values()) for (const r of s.journal.durable) if (r.t === 'step') records.push(r);
    const planned = new Set(this.clients.map((c) => c.id));
    for (const r of records)
      if (!planned.has(r.sagaId)) v(`sagas: ${r.key} ran at a step service but no client started saga ${r.sagaId}`);
    for (const c of this.clients) {
      const placed = this.groupOf(c.id);
      for (const [g, t] of tables.entries())
        if (g !== placed && (t?.sagas.has(c.id) || t?.tombstones.has(c.id)))
          v(`placement: saga ${c.id} is in group ${g}'s log, placed in group ${placed}`);
      const s = tables[placed]?.sagas.get(c.id);
      if (!s) {
        if (records.some((r) => r.sagaId === c.id))
          v(`sagas: ${c.id} has effects at step services but the log has no record of it`);
        else if (c.started) v(`sagas: ${c.id} was started for its client but the log has no record of it`);
        continue;
      }
      if (!isTerminal(s.state)) v(`sagas: ${c.id} ended ${s.state}, neither FINISHED nor COMPENSATED`);
      if (c.end !== null && c.end !== s.state) v(`sagas: ${c.id}'s client saw ${c.end}, the log says ${s.state}`);
      if (s.state === 'finished') this.sagasFinished++;
      else if (s.state === 'compensated') this.sagasCompensated++;
      const mine = records.filter((r) => r.sagaId === c.id);
      const effects = (k: number, kind: 'action' | 'compensate'): Seqd[] =>
        mine.filter((r) => r.step === k && r.kind === kind && r.effect !== '');
      for (let k = 0; k < c.steps.length; k++) {
        const acts = effects(k, 'action');
        const comps = effects(k, 'compensate');
        const compRecords = mine.filter((r) => r.step === k && r.kind === 'compensate');
        if (acts.length > 1)
          v(
            `sagas: exactly once: ${c.id} step ${k}'s action ran ${acts.length} times (keys ${acts.map((r) => r.key).join(', ')})`,
          );
        if (comps.length > 1) v(`sagas: exactly once: ${c.id} step ${k}'s compensation ran ${comps.length} times`);
        const afterComp =
          compRecords.length > 0 ? acts.filter((a) => a.seq > Math.min(...compRecords.map((r) => r.seq))) : [];
        if (afterComp.length > 0)
          v(`sagas: ${c.id} step ${k}'s action ran after its compensation was recorded (a hanging action)`);
        const afterPivot = c.pivot !== null && k > c.pivot;
        if (afterPivot && compRecords.length > 0)
          v(`sagas: ${c.id} step ${k} is after the pivot (step ${c.pivot}) but was compensated`);
        if (s.state === 'finished') {
          if (acts.length === 0) v(`sagas: ${c.id} FINISHED but step ${k}'s action never ran`);
          if (compRecords.length > 0) v(`sagas: ${c.id} FINISHED but step ${k} was compensated`);
        }
        if (s.state === 'compensated') {
          if (acts.length > 0 && comps.length === 0)
            v(`sagas: ${c.id} COMPENSATED but step ${k}'s action ran and was never compensated`);
          if (comps.length > 0 && acts.length === 0)
            v(`sagas: ${c.id} step ${k} compensated though its action never ran (not an empty compensation)`);
          if (afterPivot && acts.length > 0) v(`sagas: ${c.id} COMPENSATED but step ${k}, after the pivot, ran`);
        }
      }
      // Actions in the order of their steps.
      const acted = mine.filter((r) => r.kind === 'action' && r.effect !== '').sort((a, b) => a.seq - b.seq);
      for (let i = 1; i < acted.length; i++)
        if (acted[i].step < acted[i - 1].step)
          v(`sagas: ${c.id} ran step ${acted[i - 1].step}'s action before step ${acted[i].step}'s (not in step order)`);
      // A step the log had not reached when it decided the saga never runs its action.
      const d = this.decided.get(c.id);
      if (d === undefined) v(`sagas: ${c.id} ended ${s.state} but no replica was seen applying its decision`);
      else {
        const expected = s.state === 'finished' ? 'finished' : 'compensating';
        if (d.state !== expected && !(d.state === 'compensated' && s.state === 'compensated'))
          v(`sagas: ${c.id} was decided ${d.state} but ended ${s.state}`);
        for (const k of d.pending)
          if (effects(k, 'action').length > 0)
            v(
              `sagas: ${c.id} step ${k}'s action ran though the log had decided the saga ${d.state} before reaching it`,
            );
      }
      // Compensations in reverse order of the steps.
      const order = mine.filter((r) => r.kind === 'compensate' && r.effect !== '').sort((a, b) => a.seq - b.seq);
      for (let i = 1; i < order.length; i++)
        if (order[i].step > order[i - 1].step)
          v(`sagas: ${c.id} compensated step ${order[i - 1].step} before step ${order[i].step} (not in reverse order)`);
    }
  }
}

/** One saga: 1–4 steps over the participants, a pivot in about half of them, refusals and transient errors. */
export const sagaPlanArb: fc.Arbitrary<SagaPlan> = fc.record({
  atMs: fc.integer({ min: 0, max: 3_999 }),
  steps: fc.array(
    fc.record({
      service: fc.nat(3),
      fail: fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, { arbitrary: fc.constant(true), weight: 1 }),
      errors: fc.oneof(
        { arbitrary: fc.constant(0), weight: 4 },
        { arbitrary: fc.integer({ min: 1, max: 6 }), weight: 1 },
      ),
      compErrors: fc.oneof(
        { arbitrary: fc.constant(0), weight: 4 },
        { arbitrary: fc.integer({ min: 1, max: 6 }), weight: 1 },
      ),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  pivot: fc.oneof(fc.constant(null), fc.nat(3)),
});

/** The world's scenarios (faults, commits), with sagas beside the commits. */
export const sagaScenarioArb: fc.Arbitrary<SagaScenario> = fc
  .tuple(systemScenarioArb, fc.array(sagaPlanArb, { minLength: 1, maxLength: 5 }))
  .map(([sc, sagas]) => ({ ...sc, txns: sc.txns.slice(0, 4), sagas }));

export interface SagaRunResult {
  /** The extension, for properties that read what it counted. */
  ext: SagaExtension | null;
  violations: string[];
  crashes: number;
  partitions: number;
  /** Crashes and partitions that struck a node leading a quiesced group (SystemResult.quietFaults). */
  quietFaults: number;
  sagas: number;
  finished: number;
  compensated: number;
  stuck: number;
  txns: number;
  committed: number;
}

/** Runs one scenario: the world with sagas beside its commits. */
export function runSagaWorld(sc: SagaScenario, trace?: (line: string) => void): SagaRunResult {
  let ext: SagaExtension | null = null;
  const w = new SystemWorld(sc, (world) => {
    ext = new SagaExtension(world, sc);
    return ext;
  });
  if (trace) w.trace = trace;
  const r = w.run();
  const e = ext as SagaExtension | null;
  return {
    ext: e,
    violations: r.violations,
    crashes: r.crashes,
    partitions: r.partitions,
    quietFaults: r.quietFaults,
    sagas: sc.sagas.length,
    finished: e?.sagasFinished ?? 0,
    compensated: e?.sagasCompensated ?? 0,
    stuck: e?.stuckFlagged ?? 0,
    txns: r.txns,
    committed: r.committed,
  };
}
