/**
 * The events Lambda's triggers send, in AWS's documented shapes: API Gateway REST proxy (v1) and
 * WebSocket events, SQS batches, EventBridge Scheduler invocations, CloudFormation custom resource
 * requests. https://docs.aws.amazon.com/lambda/latest/dg/lambda-services.html
 */
import { createHash, randomUUID } from 'node:crypto';
import { ACCOUNT, REGION } from './assembly.ts';

const now = () => Date.now();

/**
 * A REST API proxy integration event (payload format 1.0), every header sent once. A Buffer body
 * arrives base64-encoded, as API Gateway sends every body to this API (its binary media types match all).
 */
export function restEvent(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body: string | Buffer | null = null,
  query: Record<string, string> = {},
) {
  const all = { Host: 'apif70053c.execute-api.us-east-1.amazonaws.com', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Port': '443', ...headers };
  const hasQuery = Object.keys(query).length > 0;
  return {
    resource: '/v1/{proxy+}',
    path,
    httpMethod: method,
    headers: all,
    multiValueHeaders: Object.fromEntries(Object.entries(all).map(([k, v]) => [k, [v]])),
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]])) : null,
    pathParameters: { proxy: path.replace(/^\/v1\//, '') },
    stageVariables: null,
    requestContext: {
      resourceId: 'abc123',
      resourcePath: '/v1/{proxy+}',
      httpMethod: method,
      extendedRequestId: randomUUID(),
      requestTime: new Date().toUTCString(),
      path: `/prod${path}`,
      accountId: ACCOUNT,
      protocol: 'HTTP/1.1',
      stage: 'prod',
      domainPrefix: 'apif70053c',
      requestTimeEpoch: now(),
      requestId: randomUUID(),
      identity: { sourceIp: '203.0.113.7', userAgent: 'rehearsal', accessKey: null, accountId: null, caller: null, user: null, userArn: null },
      domainName: 'apif70053c.execute-api.us-east-1.amazonaws.com',
      apiId: 'apif70053c',
    },
    body: Buffer.isBuffer(body) ? body.toString('base64') : body,
    isBase64Encoded: Buffer.isBuffer(body),
  };
}

/** A WebSocket API event for `$connect`, `$default` or `$disconnect`. */
export function websocketEvent(
  routeKey: '$connect' | '$default' | '$disconnect',
  connectionId: string,
  extra: Record<string, unknown> = {},
  context: { domainName?: string; apiId?: string } = {},
) {
  const eventType = routeKey === '$connect' ? 'CONNECT' : routeKey === '$disconnect' ? 'DISCONNECT' : 'MESSAGE';
  return {
    requestContext: {
      routeKey,
      eventType,
      connectionId,
      ...(eventType === 'MESSAGE' ? { messageId: randomUUID() } : {}),
      extendedRequestId: randomUUID(),
      requestTime: new Date().toUTCString(),
      messageDirection: 'IN',
      stage: 'prod',
      connectedAt: now(),
      requestTimeEpoch: now(),
      identity: { sourceIp: '203.0.113.7' },
      requestId: randomUUID(),
      domainName: 'apif70053c.execute-api.us-east-1.amazonaws.com',
      apiId: 'apif70053c',
      ...(eventType === 'DISCONNECT' ? { disconnectStatusCode: 1000, disconnectReason: '' } : {}),
      ...context,
    },
    isBase64Encoded: false,
    ...extra,
  };
}

/** An SQS batch as the event source mapping delivers it (first delivery of each body). */
export function sqsEvent(queueName: string, bodies: string[]) {
  return {
    Records: bodies.map((body) => ({
      messageId: randomUUID(),
      receiptHandle: randomUUID(),
      body,
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(now()), SenderId: 'AROAREHEARSAL', ApproximateFirstReceiveTimestamp: String(now()) },
      messageAttributes: {},
      md5OfBody: createHash('md5').update(body).digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:${REGION}:${ACCOUNT}:${queueName}`,
      awsRegion: REGION,
    })),
  };
}

/** What an EventBridge schedule without an Input delivers: the scheduled event. */
export function scheduledEvent(scheduleName: string) {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.scheduler',
    account: ACCOUNT,
    time: new Date().toISOString(),
    region: REGION,
    resources: [`arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/default/${scheduleName}`],
    detail: {},
  };
}

/** A CloudFormation custom resource request; the response goes to `responseBase/cfn-response/...`. */
export function customResourceEvent(
  requestType: 'Create' | 'Update' | 'Delete',
  r: { stack: string; logicalId: string; type: string; properties: Record<string, unknown> },
  responseBase: string,
) {
  return {
    RequestType: requestType,
    ServiceToken: r.properties.ServiceToken,
    ResponseURL: `${responseBase}/cfn-response/${randomUUID()}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc`,
    StackId: `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/${r.stack}/${randomUUID()}`,
    RequestId: randomUUID(),
    LogicalResourceId: r.logicalId,
    ResourceType: r.type,
    ...(requestType === 'Create' ? {} : { PhysicalResourceId: 'gantry-bootstrap', OldResourceProperties: r.properties }),
    ResourceProperties: r.properties,
  };
}
