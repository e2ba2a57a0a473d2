// Bounds on the free texts a person or a participant writes into the
// cluster's requests and records: an operator's name and a reason (txn
// resolve, saga retry and resolve, a heuristic report, a NO vote's reason,
// the console's actions). Defined once; every edge that takes such a text
// checks it against these.

/** An operator's name, as recorded with an act. */
export const OPERATOR_CHARS_MAX = 128;
/** A reason (an operator's, a participant's) or a similar free text, such as a gid, accepted at an edge. */
export const REASON_CHARS_MAX = 1_000;
