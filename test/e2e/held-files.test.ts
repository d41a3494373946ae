/**
 * Files held by the gateway, end to end in both modes with the official openai SDK: `/v1/files`
 * without a provider keeps the file in the workspace (metadata in DynamoDB Local, bytes in the
 * data directory): upload, list (purpose, after/limit), retrieve, byte-exact content, delete (the
 * bytes too); another workspace sees none of it; a batch file must be UTF-8 lines; over the
 * limit is a 413. With a provider named, files still go to the provider.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { sha256, startMockOpenAIApi, type MockOpenAIApi } from '../support/mock-openai-api.ts';
import { send } from '../support/send-body.ts';

const MiB = 1 << 20;
const line = (custom_id: string, content = 'hi') =>
  JSON.stringify({ custom_id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] } });

describe.each(['direct', 'lambda'] as const)('files held by the gateway (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAIApi;
  let key: string;
  let client: OpenAI;
  let otherClient: OpenAI;

  const sdk = (apiKey: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
  /** The stored bytes of a file, on disk in the data directory. */
  const blobOf = (id: string) => {
    const root = path.join(gw.deps.config.blobDir as string, 'files');
    const ws = existsSync(root) ? readdirSync(root).find((w) => existsSync(path.join(root, w, id))) : undefined;
    return ws ? path.join(root, ws, id) : undefined;
  };
  const upload = (body: FormData, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body });
  const form = (content: string, purpose?: string, filename = 'in.jsonl') => {
    const f = new FormData();
    f.append('file', new Blob([content]), filename);
    if (purpose !== undefined) f.append('purpose', purpose);
    return f;
  };

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAIApi()]);
    key = await gw.workspaceKey();
    client = sdk(key);
    const ws = await gw.admin('POST', '/v1/workspaces', { name: 'Other', slug: `other-${mode}` });
    const other = await gw.admin(
      'POST',
      '/v1/api-keys/workspace/service',
      { name: 'other', workspace_id: ws.json.id, scopes: ['completions.write'] },
      ADMIN_KEY,
    );
    otherClient = sdk(other.json.key as string);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('uploads, lists, retrieves, streams the exact bytes back, and deletes them', async () => {
    const content = Buffer.from(`${line('a')}\n${line('b', 'héllo ✓')}\n`);
    const file = await client.files.create({ file: await toFile(content, 'input.jsonl'), purpose: 'batch' });
    expect(file).toMatchObject({ object: 'file', bytes: content.length, filename: 'input.jsonl', purpose: 'batch', status: 'processed' });
    expect(file.id).toMatch(/^file-[a-z0-9]+$/);
    expect(Math.abs(file.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect(mock.received).toEqual([]);

    const binary = randomBytes(3 * MiB);
    const image = await client.files.create({ file: await toFile(binary, 'photo.png'), purpose: 'vision' });
    expect(image.bytes).toBe(binary.length);

    expect(await client.files.retrieve(file.id)).toEqual(file);
    const batchOnly = await client.files.list({ purpose: 'batch' });
    expect(batchOnly.data.map((f) => f.id)).toEqual([file.id]);
    // Newest first, paged with limit and after.
    const first = await fetch(`${gw.url}/v1/files?limit=1`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json());
    expect(first).toMatchObject({ object: 'list', data: [{ id: image.id }], first_id: image.id, last_id: image.id, has_more: true });
    const second = await client.files.list({ limit: 1, after: image.id });
    expect(second.data.map((f) => f.id)).toEqual([file.id]);
    expect(second.has_more).toBe(false);
    expect((await client.files.list({ order: 'asc' })).data.map((f) => f.id)).toEqual([file.id, image.id]);
    const badOrder = await fetch(`${gw.url}/v1/files?order=up`, { headers: { authorization: `Bearer ${key}` } });
    expect(badOrder.status).toBe(400);
    expect((await badOrder.json()).error.param).toBe('order');
    const badLimit = await fetch(`${gw.url}/v1/files?limit=0`, { headers: { authorization: `Bearer ${key}` } });
    expect((await badLimit.json()).error).toMatchObject({ param: 'limit', message: 'limit: must be an integer between 1 and 10000' });

    const download = await client.files.content(image.id);
    expect(download.headers.get('content-type')).toBe('application/octet-stream');
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="photo.png"');
    expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(binary));
    expect(Buffer.from(await (await client.files.content(file.id)).arrayBuffer())).toEqual(content);

    const stored = blobOf(image.id);
    expect(stored && existsSync(stored)).toBe(true);
    expect(await client.files.delete(image.id)).toEqual({ id: image.id, object: 'file', deleted: true });
    expect(existsSync(stored as string)).toBe(false);
    await expect(client.files.retrieve(image.id)).rejects.toMatchObject({
      status: 404,
      error: { message: `No such File object: ${image.id}`, param: 'file_id' },
    });
    await expect(client.files.content(image.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.files.delete(image.id)).rejects.toMatchObject({ status: 404 });
    expect((await client.files.list()).data.map((f) => f.id)).toEqual([file.id]);
  });

  it("keeps a workspace's files from every other workspace", async () => {
    const file = await client.files.create({ file: await toFile(Buffer.from(`${line('x')}\n`), 'mine.jsonl'), purpose: 'batch' });
    expect((await otherClient.files.list()).data).toEqual([]);
    await expect(otherClient.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(otherClient.files.content(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(otherClient.files.delete(file.id)).rejects.toMatchObject({ status: 404 });
    expect((await client.files.retrieve(file.id)).id).toBe(file.id);
  });

  it('takes a batch file of lines whatever they say (a batch judges them), and refuses one that is not UTF-8 text, naming the line', async () => {
    const lines = [line('a'), '{not json', line('a'), ''];
    const taken = await upload(form(lines.join('\n') + '\n', 'batch', 'lines.jsonl'));
    expect(taken.status).toBe(200);
    expect(await (await fetch(`${gw.url}/v1/files/${(await taken.json()).id}/content`, { headers: { authorization: `Bearer ${key}` } })).text()).toBe(
      lines.join('\n') + '\n',
    );
    const latin1 = Buffer.concat([Buffer.from(`${line('a')}\n${line('b')}\n{"custom_id":"caf`), Buffer.from([0xe9]), Buffer.from('"}\n')]);
    const f = new FormData();
    f.append('file', new Blob([latin1]), 'in.jsonl');
    f.append('purpose', 'batch');
    const res = await upload(f);
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { param: string; code: string; message: string } };
    expect(error).toMatchObject({ param: 'file', code: 'invalid_batch_file', message: 'file: line 3: is not UTF-8 text' });
    // Nothing was kept of the refused upload; other purposes take any bytes.
    expect((await client.files.list({ purpose: 'batch' })).data.every((x) => x.filename !== 'in.jsonl')).toBe(true);
    expect((await upload(form('{not json', 'user_data'))).status).toBe(200);
  });

  it('names a missing or unknown purpose, a missing file, and a body that is not a form', async () => {
    const cases: [FormData | string, string, string][] = [
      [form(line('a')), 'purpose', 'is required'],
      [form(line('a'), 'training'), 'purpose', 'must be one of'],
      [
        (() => {
          const f = new FormData();
          f.append('purpose', 'batch');
          return f;
        })(),
        'file',
        'is required',
      ],
      ['{}', 'content-type', 'multipart/form-data'],
    ];
    for (const [body, param, message] of cases) {
      const res = await fetch(`${gw.url}/v1/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, ...(typeof body === 'string' ? { 'content-type': 'application/json' } : {}) },
        body,
      });
      expect(res.status, param).toBe(400);
      const { error } = (await res.json()) as { error: { param: string; message: string } };
      expect(error.param).toBe(param);
      expect(error.message).toContain(message);
    }
  });

  it('refuses an upload over 200 MiB with a 413 naming the limit, before reading it all', async () => {
    const boundary = 'held-files-limit';
    const head = Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.jsonl"\r\n\r\n`,
    );
    const headers = { 'x-gw-api-key': key, 'content-type': `multipart/form-data; boundary=${boundary}` };
    const declared = await send(`${gw.url}/v1/files`, headers, 260 * MiB, false, head);
    expect(declared.status).toBe(413);
    expect(declared.written).toBeLessThan(64 * MiB);
    if (mode === 'direct') {
      expect(JSON.parse(declared.body)).toMatchObject({ error: { code: 'request_too_large', message: expect.stringContaining('200 MiB') } });
      // Without a Content-Length: cut once the file passes the limit, and nothing is kept.
      const streamed = await send(`${gw.url}/v1/files`, headers, 202 * MiB, true, head);
      expect(streamed.status).toBe(413);
      expect(JSON.parse(streamed.body).error.message).toContain('200 MiB');
      expect(readdirSync(path.join(gw.deps.config.blobDir as string, '.tmp'))).toEqual([]);
    } else {
      // API Gateway's own payload limit comes first.
      expect(declared.body).toContain('Request Too Long');
    }
  });

  it('sends files to the provider when one is named, as before', async () => {
    const headers = { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, 'x-gw-api-key': key };
    const viaProvider = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0, defaultHeaders: headers });
    const content = Buffer.from(`${line('p')}\n`);
    const file = await viaProvider.files.create({ file: await toFile(content, 'provider.jsonl'), purpose: 'batch' });
    expect(mock.received.at(-1)).toMatchObject({ method: 'POST', path: '/v1/files' });
    expect(mock.received.at(-1)?.form?.files.file?.sha256).toBe(sha256(content));
    expect((await viaProvider.files.retrieve(file.id)).filename).toBe('provider.jsonl');
    await expect(client.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
  });

  it("sends files to the provider of a key's pinned config", async () => {
    const config = { provider: 'openai', custom_host: `${mock.url}/v1`, api_key: 'sk-cfg' };
    const made = await gw.admin('POST', '/v1/configs', { name: `Files ${mode}`, workspace_id: 'default', config });
    expect(made.status).toBe(200);
    const created = await gw.admin('POST', '/v1/api-keys/workspace/service', {
      name: 'pinned',
      workspace_id: 'default',
      scopes: ['completions.write'],
      defaults: { config_id: made.json.slug },
    });
    const pinned = sdk(created.json.key as string);
    const before = mock.received.length;
    const listed = await pinned.files.list();
    expect(mock.received.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/files']);
    expect(listed.data.map((f) => f.filename)).not.toContain('mine.jsonl');
  });

  it('needs a workspace key with completions.write', async () => {
    const readOnly = await gw.workspaceKey(['configs.read']);
    const res = await fetch(`${gw.url}/v1/files`, { headers: { authorization: `Bearer ${readOnly}` } });
    expect(res.status).toBe(403);
    expect((await fetch(`${gw.url}/v1/files`)).status).toBe(401);
  });
});
