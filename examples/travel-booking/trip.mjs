// Books trips with the SDK: `node examples/travel-booking/trip.mjs [N] [decline]`
// with VERDICT_ENDPOINTS set; the step services of service.mjs must be running.
// Prints each saga's end: FINISHED (seat and room booked, card charged,
// email sent) or COMPENSATED (the card was declined: seat and room released).

import { VerdictClient } from 'verdict/client';
import { clientSecurity } from '../cluster-security.mjs';
import { TRIP_PIVOT, TRIP_STEPS } from './steps.mjs';

const n = Number(process.argv[2] ?? 1);
const decline = process.argv[3] === 'decline';
const client = new VerdictClient({
  endpoints: (process.env.VERDICT_ENDPOINTS ?? '127.0.0.1:7001').split(','),
  ...clientSecurity(),
});
for (let i = 0; i < n; i++) {
  const saga = await client.saga({ steps: TRIP_STEPS(decline), pivot: TRIP_PIVOT });
  const { end, status } = await saga.result();
  console.log(`${end.toUpperCase()} ${saga.id}: ${status.outputs.filter((o) => o !== '').join(' ')}`);
}
client.close();
