// The travel-booking example's step services, one per process:
//
//   node examples/travel-booking/service.mjs flight|hotel|payment|email
//
// with VERDICT_CLUSTER (the cluster id), VERDICT_ENDPOINTS (node addresses, comma-separated), LISTEN (host:port), DATA
// (a directory), and for flight and hotel PG_URL (a PostgreSQL database); TLS as ../cluster-security.mjs says. The saga
// (examples/travel-booking/steps.mjs):
//
//   0 flight.reserve  a seat, marked pending for the saga (a semantic lock)
//   1 hotel.reserve   a room, marked pending likewise
//   2 payment.charge  the pivot: a card declined compensates 1 and 0
//   3 flight.confirm  after the pivot: retried until done, never compensated
//   4 hotel.confirm
//   5 email.send      the confirmation
//
// Each reservation's compensation clears its mark; each confirmation turns
// the mark into a booking. Other writers see a pending seat or room as taken.
// It imports the package (`verdict/saga`), as a service of yours would.

import { pino } from 'pino';
import { postgresSemanticLock, startStepService } from 'verdict/saga';
import { serverSecurity } from '../cluster-security.mjs';

const which = process.argv[2] ?? '';
/** @param {string} name */
const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`set ${name}`);
  return v;
};

/** Seats and rooms: a row each, free when saga_pending and booked_by are both null. */
/** @param {string} table */
const SCHEMA = (table) => `
CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, saga_pending text, booked_by text);
INSERT INTO ${table} (id) SELECT '${table}-' || g FROM generate_series(1, 200) g ON CONFLICT DO NOTHING;`;

/**
 * @param {'seats' | 'rooms'} table
 * @returns {import('verdict/saga').PgStepHandlers}
 */
function booking(table) {
  const lock = postgresSemanticLock(table, 'id');
  return {
    reserve: {
      action: async (tx, req) => {
        // The first free one, skipping rows other transactions hold right now.
        const free = await tx.query(
          `SELECT id FROM ${table} WHERE saga_pending IS NULL AND booked_by IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        );
        const id = free.rows[0]?.id;
        if (!id || !(await lock.mark(tx, id, req.sagaId))) return { status: 'failed', reason: `no ${table} left` };
        return { status: 'done', output: id };
      },
      compensate: async (tx, req) => {
        await tx.query(`UPDATE ${table} SET saga_pending = NULL WHERE saga_pending = $1`, [req.sagaId]);
        return { status: 'done', output: '' };
      },
    },
    confirm: {
      action: async (tx, req) => {
        const held = await tx.query(`SELECT id FROM ${table} WHERE saga_pending = $1`, [req.sagaId]);
        for (const { id } of held.rows) {
          await tx.query(`UPDATE ${table} SET booked_by = $2 WHERE id = $1`, [id, req.sagaId]);
          await lock.clear(tx, id, req.sagaId);
        }
        return { status: 'done', output: held.rows.map((r) => r.id).join(',') };
      },
      // After the pivot: never called.
      compensate: async () => ({ status: 'done', output: '' }),
    },
  };
}

/** @type {Record<string, import('verdict/saga').StepHandlers>} */
const memory = {
  payment: {
    charge: {
      action: (req) =>
        req.input === 'decline'
          ? { status: 'failed', reason: 'card declined' }
          : { status: 'done', output: `charged ${req.sagaId}`, effect: `charge ${req.sagaId}` },
      compensate: (req) => ({ status: 'done', output: '', effect: `refund ${req.sagaId}` }),
    },
  },
  email: {
    send: {
      action: (req) => ({ status: 'done', output: `mailed ${req.sagaId}`, effect: `mail ${req.sagaId}` }),
      compensate: () => ({ status: 'done', output: '', effect: '' }),
    },
  },
};

const common = {
  clusterId: env('VERDICT_CLUSTER'),
  serviceId: which,
  listen: env('LISTEN'),
  endpointsOfCluster: env('VERDICT_ENDPOINTS').split(','),
  dataDir: env('DATA'),
  logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }),
  registerRetryMs: 200,
  ...serverSecurity(which),
};

/**
 * The table exists before the first step arrives. Made inside an action, it
 * would be rolled back with every action that answers FAILED (the inbox rolls
 * a refusal back to before the handler), and a database whose every
 * reservation was refused or abandoned would have no table at all.
 */
/**
 * @param {string} url
 * @param {'seats' | 'rooms'} table
 */
async function createSchema(url, table) {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(SCHEMA(table));
  } finally {
    await c.end();
  }
}

const table = which === 'flight' ? 'seats' : 'rooms';
if (which === 'flight' || which === 'hotel') await createSchema(env('PG_URL'), table);
const service =
  which === 'flight' || which === 'hotel'
    ? await startStepService({ ...common, postgres: { url: env('PG_URL'), handlers: booking(table) } })
    : which in memory
      ? await startStepService({ ...common, handlers: memory[which] })
      : null;
if (!service) throw new Error('usage: service.mjs flight|hotel|payment|email');
await service.registered;
console.log(`${which} ready at ${service.address}`);
process.on('SIGTERM', () => void service.stop().then(() => process.exit(0)));
