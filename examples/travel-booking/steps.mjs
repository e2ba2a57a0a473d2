// The travel-booking saga's steps: what trip.mjs starts and the tests check.
// A declined card (the pivot's input "decline") compensates the two
// reservations; after the pivot every step is retried until it is done.

/** @param {boolean} decline */
export const TRIP_STEPS = (decline) => [
  { service: 'flight', name: 'reserve' },
  { service: 'hotel', name: 'reserve' },
  { service: 'payment', name: 'charge', input: decline ? 'decline' : '' },
  { service: 'flight', name: 'confirm' },
  { service: 'hotel', name: 'confirm' },
  { service: 'email', name: 'send' },
];
export const TRIP_PIVOT = 2;
