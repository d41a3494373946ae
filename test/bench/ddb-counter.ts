/**
 * Counts the DynamoDB HTTP requests the bench Gantry makes (each attempt, retries included), by
 * who made them: a request before its answer ended (the caller waited for it: synchronous), a
 * request after its answer ended (deferred), the log-ingest worker, or anything else (timers).
 * Counted by a middleware on the process's one document client, and for the single-item commands
 * store/db.ts sends through its lean signed client (which no middleware sees) by observing those
 * attempts: not estimated.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { observeSignedCommands } from '../../layers/core/src/store/signed-doc.ts';
import type { DynamoCallsMessage } from './protocol.ts';

type Origin = { kind: 'request'; answered: boolean } | { kind: 'worker' };

const origin = new AsyncLocalStorage<Origin>();

export type DynamoCounts = Omit<DynamoCallsMessage, 'type'>;

const counts: DynamoCounts = { requests: 0, sync: 0, after_answer: 0, log_ingest: 0, other: 0, sync_by_operation: {} };

/** Work done under this (a log-ingest worker in the serving process) is counted as the worker's, not a request's. */
export const asWorker = <T>(fn: () => T): T => origin.run({ kind: 'worker' }, fn);

export function countDynamoCalls(doc: DynamoDBDocumentClient): () => DynamoCounts {
  // Every request Node's HTTP server takes gets an origin of its own; its answer ending marks it.
  diagnostics.subscribe('http.server.request.start', (message) => {
    const { response } = message as { request: IncomingMessage; response: ServerResponse };
    const store: Origin = { kind: 'request', answered: false };
    counts.requests++;
    response.once('finish', () => (store.answered = true));
    origin.enterWith(store);
  });
  const count = (commandName: string | undefined) => {
    const o = origin.getStore();
    if (o?.kind === 'worker') counts.log_ingest++;
    else if (o?.kind === 'request' && o.answered) counts.after_answer++;
    else if (o?.kind === 'request') {
      counts.sync++;
      const op = commandName ?? 'unknown';
      counts.sync_by_operation[op] = (counts.sync_by_operation[op] ?? 0) + 1;
    } else counts.other++;
  };
  // Each attempt, as the middleware below counts each HTTP request.
  observeSignedCommands(doc, (c) => count(c.commandName));
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      count(context.commandName);
      return next(args);
    },
    // After the retry middleware: one count per HTTP request sent.
    { step: 'deserialize', name: 'benchDynamoCallCounter' },
  );
  return () => ({ ...counts, sync_by_operation: { ...counts.sync_by_operation } });
}
