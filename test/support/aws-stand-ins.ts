/**
 * What a deployed function talks to besides DynamoDB, as one real HTTP server: CloudFormation's
 * pre-signed response URL (PUT), Secrets Manager's PutSecretValue and SQS's SendMessageBatch (JSON
 * protocols, as the bundled SDK sends them). The SDK reaches it through AWS_ENDPOINT_URL_<SERVICE>.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandIns {
  url: string;
  /** Bodies PUT to the CloudFormation response URL, in order. */
  cfnResponses: Record<string, unknown>[];
  /** Secret values by secret id, as last put; and every put. */
  secrets: Map<string, string>;
  secretPuts: number;
  /** Message bodies sent to each queue URL. */
  messages: Map<string, string[]>;
  /** SendMessageBatch requests taken (SQS bills each, per 64 KB of payload). */
  sqsRequests: number;
  close(): Promise<void>;
}

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

export async function startStandIns(): Promise<StandIns> {
  const s: Omit<StandIns, 'url' | 'close'> = { cfnResponses: [], secrets: new Map(), secretPuts: 0, messages: new Map(), sqsRequests: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const target = String(req.headers['x-amz-target'] ?? '');
      const json = (status: number, value: unknown, type = 'application/x-amz-json-1.1') =>
        res.writeHead(status, { 'content-type': type }).end(JSON.stringify(value));
      if (req.method === 'PUT' && req.url?.startsWith('/cfn-response')) {
        s.cfnResponses.push(JSON.parse(body) as Record<string, unknown>);
        res.writeHead(200).end();
      } else if (target === 'secretsmanager.PutSecretValue') {
        const input = JSON.parse(body) as { SecretId: string; SecretString: string };
        s.secrets.set(input.SecretId, input.SecretString);
        s.secretPuts++;
        json(200, { ARN: input.SecretId, Name: 'admin-key', VersionId: `v${s.secretPuts}` });
      } else if (target === 'AmazonSQS.SendMessageBatch') {
        const input = JSON.parse(body) as { QueueUrl: string; Entries: { Id: string; MessageBody: string }[] };
        s.sqsRequests++;
        const list = s.messages.get(input.QueueUrl) ?? [];
        list.push(...input.Entries.map((e) => e.MessageBody));
        s.messages.set(input.QueueUrl, list);
        const Successful = input.Entries.map((e) => ({ Id: e.Id, MessageId: `m-${list.length}-${e.Id}`, MD5OfMessageBody: md5(e.MessageBody) }));
        json(200, { Successful, Failed: [] }, 'application/x-amz-json-1.0');
      } else {
        json(400, { __type: 'UnknownOperationException', message: `stand-in does not serve ${req.method} ${req.url} ${target}` });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(s, { url, close: () => new Promise<void>((r) => server.close(() => r())) }) as StandIns;
}
