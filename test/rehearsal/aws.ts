/**
 * AWS as the rehearsed functions see it: one HTTP server that every SDK client reaches through
 * AWS_ENDPOINT_URL. It accepts only the credentials it handed out (one access key per function, so
 * every call names its caller), records each call as IAM would authorize it (the action, and the
 * resource ARN the call names), and serves it: DynamoDB is forwarded to DynamoDB Local, and SQS,
 * Secrets Manager, KMS, Step Functions (JSON protocols, the action in X-Amz-Target) and S3 (REST,
 * path-style) are small in-memory stand-ins. CloudFormation's pre-signed response URL is served too.
 * A WebSocket API's `@connections` management API is served over HTTPS (the realtime function
 * builds its endpoint from the event's domainName, so no endpoint variable reaches it): one
 * server per API on `localhost`, with a self-signed certificate the functions trust through
 * NODE_EXTRA_CA_CERTS.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ACCOUNT, REGION } from './assembly.ts';

/** One authorization IAM would make for a call: `service:Action` on `resource`. */
export interface AwsCall {
  /** The function that made it (by its credentials). */
  caller: string;
  /** The API operation as sent (`DynamoDB_20120810.TransactWriteItems`, `PUT /bucket/key`). */
  operation: string;
  action: string;
  resource: string;
}

export interface FakeAws {
  url: string;
  /** Credentials for one function; its calls are recorded under `caller`. */
  credentialsFor(caller: string): { AWS_ACCESS_KEY_ID: string; AWS_SECRET_ACCESS_KEY: string; AWS_SESSION_TOKEN: string };
  calls: AwsCall[];
  /** Calls the stand-in could not serve or attribute (fail the rehearsal). */
  refused: string[];
  /** Message bodies sent to each queue, by queue name. */
  queues: Map<string, string[]>;
  secrets: Map<string, string>;
  objects: Map<string, Buffer>;
  executions: { stateMachineArn: string; name: string; input: string }[];
  cfnResponses: Record<string, unknown>[];
  /** Messages posted to each WebSocket connection (PostToConnection), by connection id. */
  posted: Map<string, Buffer[]>;
  /** Connections closed by DeleteConnection. */
  deletedConnections: Set<string>;
  /** The PEM file of the certificate the HTTPS stand-ins present (for NODE_EXTRA_CA_CERTS). */
  caFile: string;
  /** The domain name (`localhost:<port>`) serving the `@connections` API of the WebSocket API `apiId`. */
  connectionsDomain(apiId: string): Promise<string>;
  close(): Promise<void>;
}

type Body = Record<string, unknown>;

const readAll = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

const tableArn = (name: string) => `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}`;
const queueArn = (url: string) => {
  const [, account, name] = new URL(url).pathname.split('/');
  return `arn:aws:sqs:${REGION}:${account}:${name}`;
};
const secretArn = (id: string) => (id.startsWith('arn:') ? id : `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${id}-AbCdEf`);
const keyArn = (id: string) => (id.startsWith('arn:') ? id : `arn:aws:kms:${REGION}:${ACCOUNT}:key/${id}`);

/** The IAM authorizations a DynamoDB call needs (a transaction needs each item's own action). */
function dynamodbAuthorizations(op: string, body: Body): { action: string; resource: string }[] {
  const index = (b: Body) => (b.IndexName ? `/index/${String(b.IndexName)}` : '');
  if (op === 'TransactWriteItems') {
    const items = (body.TransactItems ?? []) as Record<string, Body>[];
    const kind: Record<string, string> = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem' };
    return items.flatMap((item) => Object.entries(item).map(([k, v]) => ({ action: `dynamodb:${kind[k] ?? k}`, resource: tableArn(String(v.TableName)) })));
  }
  if (op === 'TransactGetItems') {
    return ((body.TransactItems ?? []) as { Get: Body }[]).map((i) => ({ action: 'dynamodb:GetItem', resource: tableArn(String(i.Get.TableName)) }));
  }
  if (op === 'BatchGetItem' || op === 'BatchWriteItem') {
    return Object.keys((body.RequestItems ?? {}) as Body).map((t) => ({ action: `dynamodb:${op}`, resource: tableArn(t) }));
  }
  return [{ action: `dynamodb:${op}`, resource: `${tableArn(String(body.TableName))}${index(body)}` }];
}

/** `PUT /bucket/key?uploadId=...` as IAM names it. */
function s3Authorization(method: string, url: URL): { action: string; resource: string } {
  const [, bucket = '', ...rest] = url.pathname.split('/');
  const key = decodeURIComponent(rest.join('/'));
  const q = url.searchParams;
  if (!key) return { action: method === 'GET' && q.has('list-type') ? 's3:ListBucket' : `s3:${method}Bucket`, resource: `arn:aws:s3:::${bucket}` };
  const object = `arn:aws:s3:::${bucket}/${key}`;
  if (method === 'DELETE') return { action: q.has('uploadId') ? 's3:AbortMultipartUpload' : 's3:DeleteObject', resource: object };
  if (method === 'GET' && q.has('uploadId')) return { action: 's3:ListMultipartUploadParts', resource: object };
  if (method === 'GET' || method === 'HEAD') return { action: 's3:GetObject', resource: object };
  return { action: 's3:PutObject', resource: object };
}

/** The payload of an `aws-chunked` body (the SDK's streaming uploads with trailing checksums). */
function dechunk(body: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = Number.parseInt(body.subarray(at, eol).toString().split(';')[0]!, 16);
    if (!size) break;
    out.push(body.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

/** A self-signed certificate for `localhost` (openssl), in a new directory. */
function selfSignedCertificate(): { dir: string; cert: string; key: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'gantry-rehearsal-tls-'));
  const [cert, key] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { dir, cert, key };
}

const listen = async (server: Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

/** API Gateway's 128 KB limit on a message posted to a connection. */
const CONNECTION_MESSAGE_LIMIT = 128 * 1024;

export interface FakeAwsOptions {
  /**
   * Whose calls those signed with credentials the stand-in did not hand out are: for a process that
   * signs with fixed local credentials (the local server on DynamoDB Local), one stand-in per function.
   */
  caller?: string;
}

export async function startFakeAws(dynamodbEndpoint: string, opts: FakeAwsOptions = {}): Promise<FakeAws> {
  const keys = new Map<string, string>();
  const state: Omit<FakeAws, 'url' | 'close' | 'credentialsFor' | 'caFile' | 'connectionsDomain'> = {
    calls: [],
    refused: [],
    queues: new Map(),
    secrets: new Map(),
    objects: new Map(),
    executions: [],
    cfnResponses: [],
    posted: new Map(),
    deletedConnections: new Set(),
  };
  const uploads = new Map<string, Map<number, Buffer>>();

  const json = (res: ServerResponse, status: number, value: unknown, type = 'application/x-amz-json-1.1') =>
    res.writeHead(status, { 'content-type': type }).end(JSON.stringify(value));
  const refuse = (res: ServerResponse, why: string) => {
    state.refused.push(why);
    json(res, 400, { __type: 'UnknownOperationException', message: `rehearsal stand-in: ${why}` });
  };

  const forwardToDynamo = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const target = new URL(dynamodbEndpoint);
    const out = request({ host: target.hostname, port: target.port, method: req.method, path: '/', headers: { ...req.headers, host: target.host } }, (up) => {
      res.writeHead(up.statusCode ?? 500, up.headers);
      up.pipe(res);
    });
    out.on('error', (e) => json(res, 500, { __type: 'InternalServerError', message: e.message }));
    out.end(body);
  };

  const sqs = (res: ServerResponse, op: string, body: Body) => {
    const name = new URL(String(body.QueueUrl)).pathname.split('/')[2]!;
    const list = state.queues.get(name) ?? [];
    state.queues.set(name, list);
    const md5 = (s: string) => createHash('md5').update(s).digest('hex');
    if (op === 'SendMessage') {
      list.push(String(body.MessageBody));
      return json(res, 200, { MessageId: randomUUID(), MD5OfMessageBody: md5(String(body.MessageBody)) }, 'application/x-amz-json-1.0');
    }
    if (op === 'SendMessageBatch') {
      const entries = body.Entries as { Id: string; MessageBody: string }[];
      list.push(...entries.map((e) => e.MessageBody));
      const Successful = entries.map((e) => ({ Id: e.Id, MessageId: randomUUID(), MD5OfMessageBody: md5(e.MessageBody) }));
      return json(res, 200, { Successful, Failed: [] }, 'application/x-amz-json-1.0');
    }
    if (op === 'GetQueueAttributes') return json(res, 200, { Attributes: { ApproximateNumberOfMessages: String(list.length) } }, 'application/x-amz-json-1.0');
    json(res, 200, {}, 'application/x-amz-json-1.0');
  };

  const kms = (res: ServerResponse, op: string, body: Body) => {
    if (op === 'GenerateDataKey') {
      const plain = randomBytes(32);
      const blob = Buffer.from(JSON.stringify({ k: keyArn(String(body.KeyId)), p: plain.toString('base64'), c: body.EncryptionContext ?? {} }));
      return json(res, 200, { KeyId: keyArn(String(body.KeyId)), Plaintext: plain.toString('base64'), CiphertextBlob: blob.toString('base64') });
    }
    if (op === 'Decrypt') {
      const sealed = JSON.parse(Buffer.from(String(body.CiphertextBlob), 'base64').toString()) as { k: string; p: string; c: Body };
      if (JSON.stringify(sealed.c) !== JSON.stringify(body.EncryptionContext ?? {})) return json(res, 400, { __type: 'InvalidCiphertextException' });
      return json(res, 200, { KeyId: sealed.k, Plaintext: sealed.p });
    }
    json(res, 400, { __type: 'UnsupportedOperationException', message: op });
  };

  const s3 = (req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer) => {
    const [, bucket = '', ...rest] = url.pathname.split('/');
    const key = `${bucket}/${decodeURIComponent(rest.join('/'))}`;
    const body = String(req.headers['content-encoding'] ?? '').includes('aws-chunked') ? dechunk(raw) : raw;
    const q = url.searchParams;
    const etag = `"${createHash('md5').update(body).digest('hex')}"`;
    const xml = (status: number, text: string) =>
      res.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?>${text}`);
    if (req.method === 'POST' && q.has('uploads')) {
      const id = randomUUID();
      uploads.set(id, new Map());
      return xml(
        200,
        `<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${rest.join('/')}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
      );
    }
    if (req.method === 'PUT' && q.has('uploadId')) {
      uploads.get(q.get('uploadId')!)?.set(Number(q.get('partNumber')), body);
      return void res.writeHead(200, { etag }).end();
    }
    if (req.method === 'POST' && q.has('uploadId')) {
      const parts = uploads.get(q.get('uploadId')!) ?? new Map<number, Buffer>();
      state.objects.set(key, Buffer.concat([...parts.entries()].sort((a, b) => a[0] - b[0]).map(([, b]) => b)));
      uploads.delete(q.get('uploadId')!);
      return xml(
        200,
        `<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${rest.join('/')}</Key><ETag>${etag}</ETag></CompleteMultipartUploadResult>`,
      );
    }
    if (req.method === 'DELETE' && q.has('uploadId')) {
      uploads.delete(q.get('uploadId')!);
      return void res.writeHead(204).end();
    }
    if (req.method === 'PUT') {
      state.objects.set(key, body);
      return void res.writeHead(200, { etag }).end();
    }
    if (req.method === 'DELETE') {
      state.objects.delete(key);
      return void res.writeHead(204).end();
    }
    const object = state.objects.get(key);
    if (!object) return xml(404, `<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>${key}</Key></Error>`);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(object.length), etag });
    res.end(req.method === 'HEAD' ? undefined : object);
  };

  /** `POST|GET|DELETE /<stage>/@connections/<id>` of the management API (REST JSON; errors in x-amzn-errortype). */
  const connections = (req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer) => {
    const m = /^\/[^/]+\/@connections\/([^/]+)$/.exec(url.pathname);
    const fail = (status: number, type: string) =>
      res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type }).end(JSON.stringify({ message: type }));
    if (!m) return fail(404, 'NotFoundException');
    const id = decodeURIComponent(m[1]!);
    if (state.deletedConnections.has(id)) return fail(410, 'GoneException');
    if (req.method === 'DELETE') {
      state.deletedConnections.add(id);
      return void res.writeHead(204).end();
    }
    if (req.method === 'GET') return json(res, 200, { connectedAt: new Date().toISOString(), identity: { sourceIp: '203.0.113.7' } }, 'application/json');
    if (raw.length > CONNECTION_MESSAGE_LIMIT) return fail(413, 'PayloadTooLargeException');
    state.posted.set(id, [...(state.posted.get(id) ?? []), raw]);
    res.writeHead(200).end();
  };

  const handle =
    (apiId: string | undefined): RequestListener =>
    (req, res) => {
      void readAll(req).then((raw) => {
        const url = new URL(req.url ?? '/', 'http://stand-in');
        if (req.method === 'PUT' && url.pathname.startsWith('/cfn-response/')) {
          state.cfnResponses.push(JSON.parse(raw.toString()) as Record<string, unknown>);
          return void res.writeHead(200).end();
        }
        // SigV4: `Credential=<key>/<date>/<region>/<service>/aws4_request` names the caller and the service.
        const cred = /Credential=([^/]+)\/[^/]+\/([^/]+)\/([^/]+)\//.exec(String(req.headers.authorization ?? ''));
        const caller = cred && (keys.get(cred[1]!) ?? opts.caller);
        if (!cred || !caller) {
          state.refused.push(`unsigned or unknown credentials: ${req.method} ${req.url}`);
          return json(res, 403, { __type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' });
        }
        const service = cred[3]!;
        if (apiId !== undefined) {
          if (service !== 'execute-api') return refuse(res, `${caller}: ${service} ${req.method} ${req.url} on the @connections endpoint`);
          // IAM's resource for ManageConnections: the API, stage, method and connection path.
          const resource = `arn:aws:execute-api:${REGION}:${ACCOUNT}:${apiId}${decodeURIComponent(url.pathname).replace(/^(\/[^/]+)/, `$1/${req.method}`)}`;
          state.calls.push({ caller, operation: `${req.method} ${url.pathname}`, action: 'execute-api:ManageConnections', resource });
          return connections(req, res, url, raw);
        }
        const target = String(req.headers['x-amz-target'] ?? '');
        const op = target.split('.').at(-1) ?? '';
        const body = (() => {
          try {
            return target ? (JSON.parse(raw.toString() || '{}') as Body) : {};
          } catch {
            return {};
          }
        })();
        const record = (auths: { action: string; resource: string }[], operation = target) => {
          for (const a of auths) state.calls.push({ caller, operation, ...a });
        };
        switch (service) {
          case 'dynamodb':
            record(dynamodbAuthorizations(op, body));
            return forwardToDynamo(req, res, raw);
          case 'sqs': {
            // SendMessageBatch is authorized as SendMessage (and so on for the other batch actions).
            record([{ action: `sqs:${op.replace(/Batch$/, '')}`, resource: queueArn(String(body.QueueUrl)) }]);
            return sqs(res, op, body);
          }
          case 'secretsmanager': {
            const id = String(body.SecretId);
            record([{ action: `secretsmanager:${op}`, resource: secretArn(id) }]);
            if (op === 'PutSecretValue') {
              state.secrets.set(id, String(body.SecretString));
              return json(res, 200, { ARN: secretArn(id), Name: id, VersionId: randomUUID() });
            }
            if (op === 'GetSecretValue' && state.secrets.has(id)) return json(res, 200, { ARN: secretArn(id), Name: id, SecretString: state.secrets.get(id) });
            return json(res, 400, { __type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret." });
          }
          case 'kms': {
            const keyId =
              op === 'Decrypt' && !body.KeyId
                ? (JSON.parse(Buffer.from(String(body.CiphertextBlob), 'base64').toString()) as { k: string }).k
                : String(body.KeyId);
            record([{ action: `kms:${op}`, resource: keyArn(keyId) }]);
            return kms(res, op, body);
          }
          case 'states': {
            record([{ action: `states:${op}`, resource: String(body.stateMachineArn ?? body.executionArn) }]);
            if (op !== 'StartExecution') return refuse(res, `states ${op}`);
            const name = String(body.name ?? randomUUID());
            state.executions.push({ stateMachineArn: String(body.stateMachineArn), name, input: String(body.input ?? '{}') });
            return json(
              res,
              200,
              { executionArn: `${String(body.stateMachineArn).replace(':stateMachine:', ':execution:')}:${name}`, startDate: Date.now() / 1000 },
              'application/x-amz-json-1.0',
            );
          }
          case 's3':
            record([s3Authorization(req.method ?? 'GET', url)], `${req.method} ${url.pathname}${url.search}`);
            return s3(req, res, url, raw);
          default:
            record([{ action: `${service}:${op || req.method}`, resource: '*' }], `${req.method} ${req.url}`);
            return refuse(res, `${caller}: ${service} ${target || `${req.method} ${req.url}`}`);
        }
      });
    };
  const server = createServer(handle(undefined));
  const url = `http://127.0.0.1:${await listen(server)}`;
  const tls = selfSignedCertificate();
  const tlsOptions = { cert: readFileSync(tls.cert), key: readFileSync(tls.key) };
  const apiServers = new Map<string, { server: Server; domain: Promise<string> }>();
  const closeServer = (s: Server) =>
    new Promise<void>((resolve) => {
      s.closeAllConnections();
      s.close(() => resolve());
    });
  return Object.assign(state, {
    url,
    caFile: tls.cert,
    connectionsDomain(apiId: string) {
      let api = apiServers.get(apiId);
      if (!api) {
        const s = createHttpsServer(tlsOptions, handle(apiId));
        api = { server: s, domain: listen(s).then((port) => `localhost:${port}`) };
        apiServers.set(apiId, api);
      }
      return api.domain;
    },
    credentialsFor(caller: string) {
      const id = `AKIAREHEARSAL${String(keys.size).padStart(7, '0')}`;
      keys.set(id, caller);
      return { AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: randomBytes(20).toString('hex'), AWS_SESSION_TOKEN: randomBytes(16).toString('hex') };
    },
    async close() {
      await Promise.all([server, ...[...apiServers.values()].map((a) => a.server)].map(closeServer));
      rmSync(tls.dir, { recursive: true, force: true });
    },
  });
}
