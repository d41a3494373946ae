/**
 * SQS for the bench's Lambda handler, in a process of its own so its work is not counted as the
 * handler's: the stand-in of the tests (test/support/aws-stand-ins.ts, SQS's JSON protocol, as the
 * SDK sends it). Reports `ready` with its URL; `{type: 'sqs'}` answers the bodies it took since the
 * last ask, in order, and forgets them.
 */
import { startStandIns } from '../support/aws-stand-ins.ts';
import type { ReadyMessage, SqsMessage } from './protocol.ts';

const standIns = await startStandIns();

process.on('message', (m: unknown) => {
  if (typeof m !== 'object' || m === null || (m as { type?: unknown }).type !== 'sqs') return;
  const bodies = [...standIns.messages.values()].flat();
  standIns.messages.clear();
  const reply: SqsMessage = { type: 'sqs', bodies, requests: standIns.sqsRequests };
  standIns.sqsRequests = 0;
  process.send?.(reply);
});
process.on('disconnect', () => void standIns.close().finally(() => process.exit(0)));

const ready: ReadyMessage = { type: 'ready', url: standIns.url };
process.send?.(ready);
