// Where a relay publishes: a broker that confirms each message. publish()
// resolves only once the broker has the message durably (a JetStream ack, a
// RabbitMQ publisher confirm, a Kafka ack with acks=all), and rejects
// otherwise; the relay marks an event published only after it resolves.
// Implementations: ./nats-sink.ts; Kafka (kafkajs) can follow this shape.
import type { OutboxMessage } from './message.ts';

export interface Sink {
  /** Resolves once the broker confirmed `m`; `duplicate` when it already had this message id. */
  publish(m: OutboxMessage, timeoutMs: number): Promise<{ duplicate: boolean }>;
  close(): Promise<void>;
}
