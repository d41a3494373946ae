/**
 * DynamoDB calls per warm request, counted: the bench Gantry's counter (ddb-counter.ts) is read
 * before and after a window of sequential warm requests of one key, and the difference divided by
 * the requests its server took in the window.
 */
import { ask, type Child } from './children.ts';
import { CHAT_BODY, newAgent, request, round, type Target } from './load.ts';
import type { DynamoCallsMessage } from './protocol.ts';

export interface DynamoWindow {
  requests: number;
  /** Per request: made before the answer ended (the caller waited), after it, by the log-ingest worker, by timers. */
  sync_per_request: number;
  after_answer_per_request: number;
  log_ingest_per_request: number;
  other_per_request: number;
  sync_by_operation_per_request: Record<string, number>;
}

export async function dynamoWindow(gantry: Child, t: Target, n: number): Promise<DynamoWindow> {
  const agent = newAgent(1);
  let a: DynamoCallsMessage;
  let b: DynamoCallsMessage;
  try {
    // Warm the connection and whatever the key's first request loads, outside the window.
    for (let k = 0; k < 50; k++) await request(agent, t, CHAT_BODY);
    a = await ask(gantry, { type: 'dynamodb' });
    for (let k = 0; k < n; k++) await request(agent, t, CHAT_BODY);
    b = await ask(gantry, { type: 'dynamodb' });
  } finally {
    agent.destroy();
  }
  const served = b.requests - a.requests;
  if (served !== n) throw new Error(`${t.name}: Gantry took ${served} requests in a window of ${n}`);
  const per = (x: number) => round(x / served, 3);
  const ops = Object.entries(b.sync_by_operation).map(([op, count]) => [op, per(count - (a.sync_by_operation[op] ?? 0))] as const);
  return {
    requests: served,
    sync_per_request: per(b.sync - a.sync),
    after_answer_per_request: per(b.after_answer - a.after_answer),
    log_ingest_per_request: per(b.log_ingest - a.log_ingest),
    other_per_request: per(b.other - a.other),
    sync_by_operation_per_request: Object.fromEntries(ops.filter(([, v]) => v > 0)),
  };
}
