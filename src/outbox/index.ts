// verdict/outbox: the transactional outbox (enqueue in your transaction), the
// polling relay and its lease keeper, and the inbox (docs/outbox.md).
export {
  enqueue,
  outbox,
  OutboxBacklogFull,
  OUTBOX_BACKLOG_MAX,
  OUTBOX_BACKLOG_WAIT_MS,
  type EnqueueOptions,
  type OutboxEvent,
} from './enqueue.ts';
export {
  Inbox,
  INBOX_BATCH_MAX,
  InboxConfigError,
  RELAY_RETRY_HORIZON_MS,
  type BatchOutcome,
  type BatchResult,
  type InboxOptions,
  type InboxResult,
} from './inbox.ts';
export { LeaseKeeper, type LeaseKeeperOptions } from './lease-keeper.ts';
export { decodeMessage, encodeMessage, MessageError, type OutboxMessage } from './message.ts';
export {
  CdcRefusal,
  CdcRelay,
  checkCdcServer,
  ensureSlot,
  slots,
  type CdcRelayOptions,
  type SlotInfo,
} from './cdc-relay.ts';
export {
  PollingRelay,
  publishInOrder,
  type Fence,
  type PendingEvent,
  type PollingRelayOptions,
  type RoundReport,
} from './polling-relay.ts';
export { initSchema, OutboxSchemaError, OUTBOX_SCHEMA_VERSION, type Queryable } from './schema.ts';
export type { Sink } from './sink.ts';
export {
  consumeToInbox,
  EPOCH_HEADER,
  NatsSink,
  NatsSinkError,
  type ConsumeOptions,
  type InboxConsumer,
  type NatsTarget,
} from './nats-sink.ts';
