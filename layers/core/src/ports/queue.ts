/**
 * Queues carry work off the request path: log events, alerts, batch work. SQS in AWS; in-process
 * locally. Consumers receive batches and say which messages failed, so one bad message does not
 * send its whole batch back.
 */

export interface QueueMessage<T> {
  id: string;
  body: T;
  /** How many times this message was delivered before (0 the first time). */
  attempts: number;
}

export interface Queue<T> {
  send(body: T): Promise<void>;
  sendBatch(bodies: readonly T[]): Promise<void>;
}

/** Processes one batch; returns the ids of the messages to deliver again (empty: all done). */
export type QueueConsumer<T> = (batch: readonly QueueMessage<T>[]) => Promise<string[]>;

/** The environment variable holding a queue's URL: `log-events` -> `QUEUE_URL_LOG_EVENTS`. */
export const queueUrlVariable = (name: string): string => `QUEUE_URL_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
