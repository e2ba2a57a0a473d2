// The one rule for the ids of a cluster, a node, a participant and a step
// service (a step service registers as a participant): what configs, the
// CLI, the services and the saga table accept. Transaction and saga ids have
// rules of their own (./txn-id.ts, src/saga/state.ts).

/** The longest id. */
export const ID_CHARS_MAX = 64;
/** The rule in words, for refusals. */
export const ID_FORM = 'letters, digits, ".", "_" or "-", starting with a letter or digit';

/** 1–64 of letters, digits, ".", "_" or "-", starting with a letter or digit. */
export const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
