/**
 * A mock of OpenAI's API beyond chat: a real HTTP server speaking each endpoint's wire format
 * (JSON, SSE, multipart in, binary out), keeping files, batches, fine-tuning jobs, assistants,
 * threads, runs and responses in memory, and recording every request's exact bytes. Paths it does
 * not know answer from `raw` (for the passthrough tests), else 404 in OpenAI's error shape.
 */
import { createHash } from 'node:crypto';
import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RawReceived {
  method: string;
  /** Path and query as received. */
  url: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Multipart bodies: text fields, and each file's name, type, size and sha256. */
  form?: { fields: Record<string, string>; files: Record<string, { name: string; type: string; size: number; sha256: string }> };
}

/** An answer for a path the mock does not serve. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer | string | Buffer[];
}

interface StoredFile {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: 'processed';
  content: Buffer;
}

export interface MockOpenAIApi {
  url: string;
  received: RawReceived[];
  /** Answers for unknown paths, by `METHOD /path` (no query) or `*`; absent ones echo the request. */
  raw: Map<string, RawAnswer>;
  /** Milliseconds to wait before answering, by `METHOD /path`. */
  delays: Map<string, number>;
  /** Stores a file the way an upload would (e.g. a batch's output). */
  addFile(content: Buffer, filename: string, purpose: string): string;
  /** Moves a batch to `completed` with the given output file. */
  completeBatch(batchId: string, outputFileId: string): void;
  reset(): void;
  close(): Promise<void>;
}

export const sha256 = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');

const NOW = 1_750_000_000;

/** Speech audio: a deterministic stand-in per input (an MP3 frame header, then bytes of every value). */
export function speechBytes(input: string, size = 4096): Buffer {
  const out = Buffer.alloc(size);
  out.set([0xff, 0xf3, 0x44, 0xc4], 0);
  let x = createHash('sha256').update(input).digest().readUInt32BE(0) || 1;
  for (let i = 4; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function error(res: ServerResponse, status: number, message: string, param: string | null = null, code: string | null = null): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param, code } }));
}

function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_${Math.random().toString(36).slice(2)}` });
  res.end(JSON.stringify(body));
}

function list<T extends { id: string }>(items: T[], query: URLSearchParams): Record<string, unknown> {
  let data = query.get('order') === 'asc' ? [...items] : [...items].reverse();
  const after = query.get('after');
  if (after) data = data.slice(data.findIndex((d) => d.id === after) + 1);
  const limit = Number(query.get('limit') ?? 20);
  const page = data.slice(0, limit);
  return { object: 'list', data: page, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null, has_more: data.length > page.length };
}

function sse(res: ServerResponse, events: Array<{ event?: string; data: unknown }>, done: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of events) res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`);
  res.end(done ? 'data: [DONE]\n\n' : '');
}

const CATEGORIES = [
  'hate',
  'hate/threatening',
  'harassment',
  'harassment/threatening',
  'self-harm',
  'self-harm/intent',
  'self-harm/instructions',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
];

export async function startMockOpenAIApi(): Promise<MockOpenAIApi> {
  const received: RawReceived[] = [];
  const raw = new Map<string, RawAnswer>();
  const delays = new Map<string, number>();
  let seq = 0;
  const id = (prefix: string) => `${prefix}${(++seq).toString().padStart(6, '0')}`;
  const files = new Map<string, StoredFile>();
  const batches = new Map<string, Record<string, unknown> & { id: string }>();
  const jobs = new Map<string, Record<string, unknown> & { id: string }>();
  const assistants = new Map<string, Record<string, unknown> & { id: string }>();
  const threads = new Map<string, Record<string, unknown> & { id: string }>();
  const messages = new Map<string, Array<Record<string, unknown> & { id: string }>>();
  const runs = new Map<string, Record<string, unknown> & { id: string }>();
  const responses = new Map<string, { response: Record<string, unknown> & { id: string }; input: Array<Record<string, unknown> & { id: string }> }>();

  const addFile = (content: Buffer, filename: string, purpose: string): string => {
    const file: StoredFile = { id: id('file-'), object: 'file', bytes: content.length, created_at: NOW, filename, purpose, status: 'processed', content };
    files.set(file.id, file);
    return file.id;
  };
  const fileObject = ({ content: _content, ...meta }: StoredFile) => meta;

  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) parts.push(c);
    const body = Buffer.concat(parts);
    const url = new URL(req.url ?? '/', 'http://mock');
    const method = req.method ?? 'GET';
    const rec: RawReceived = { method, url: req.url ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body };
    let formData: FormData | undefined;
    if (/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) {
      formData = await new Response(body, { headers: { 'content-type': req.headers['content-type'] as string } }).formData();
      rec.form = { fields: {}, files: {} };
      for (const [name, value] of formData) {
        if (typeof value === 'string') rec.form.fields[name] = value;
        else {
          const bytes = Buffer.from(await value.arrayBuffer());
          rec.form.files[name] = { name: value.name, type: value.type, size: bytes.length, sha256: sha256(bytes) };
        }
      }
    }
    received.push(rec);
    let j: Record<string, unknown> = {};
    if (/json/.test(req.headers['content-type'] ?? '') && body.length) {
      try {
        j = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
      } catch {
        return error(res, 400, 'We could not parse the JSON body of your request.');
      }
    }
    const p = url.pathname;
    const seg = p.split('/').map((s) => decodeURIComponent(s));
    const route = `${method} ${p}`;
    const delay = delays.get(route);
    if (delay) await new Promise((r) => setTimeout(r, delay));
    if (res.destroyed) return;
    const model = typeof j.model === 'string' ? j.model : 'mock-model';

    // Inference
    if (route === 'POST /v1/completions') {
      const prompt = Array.isArray(j.prompt) ? j.prompt.join(' ') : String(j.prompt);
      const n = typeof j.n === 'number' ? j.n : 1;
      if (j.stream) {
        const chunk = (text: string, finish: string | null) => ({
          id: 'cmpl-mock',
          object: 'text_completion',
          created: NOW,
          model,
          choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
        });
        const events = [{ data: chunk(' Once', null) }, { data: chunk(' upon', null) }, { data: chunk(' a time', 'length') }];
        const usage = (j.stream_options as { include_usage?: boolean } | undefined)?.include_usage
          ? [
              {
                data: {
                  id: 'cmpl-mock',
                  object: 'text_completion',
                  created: NOW,
                  model,
                  choices: [],
                  usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
                },
              },
            ]
          : [];
        return sse(res, [...events, ...usage], true);
      }
      return json(res, {
        id: 'cmpl-mock',
        object: 'text_completion',
        created: NOW,
        model,
        system_fingerprint: 'fp_mock',
        choices: Array.from({ length: n }, (_, i) => ({ index: i, text: ` after "${prompt}"`, logprobs: null, finish_reason: 'stop' })),
        usage: { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 },
      });
    }
    if (route === 'POST /v1/embeddings') {
      const inputs = Array.isArray(j.input) ? (j.input as unknown[]) : [j.input];
      const dims = typeof j.dimensions === 'number' ? j.dimensions : 4;
      const vector = (i: number) => Array.from({ length: dims }, (_, k) => (i + 1) / (k + 2));
      const data = inputs.map((_, i) => {
        const v = vector(i);
        const embedding = j.encoding_format === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
        return { object: 'embedding', index: i, embedding };
      });
      return json(res, { object: 'list', data, model, usage: { prompt_tokens: inputs.length * 2, total_tokens: inputs.length * 2 } });
    }
    if (route === 'POST /v1/images/generations') {
      const n = typeof j.n === 'number' ? j.n : 1;
      const data = Array.from({ length: n }, (_, i) =>
        j.response_format === 'b64_json'
          ? { b64_json: Buffer.from(`png-${i}`).toString('base64') }
          : { url: `https://images.example/${i}.png`, revised_prompt: j.prompt },
      );
      return json(res, { created: NOW, data });
    }
    if (route === 'POST /v1/images/edits' || route === 'POST /v1/images/variations') {
      const image = rec.form?.files.image ?? rec.form?.files['image[]'];
      if (!image) return error(res, 400, 'image is required', 'image');
      return json(res, { created: NOW, data: [{ b64_json: Buffer.from(`edited:${image.sha256}`).toString('base64') }] });
    }
    if (route === 'POST /v1/audio/speech') {
      const type = j.response_format === 'wav' ? 'audio/wav' : j.response_format === 'opus' ? 'audio/ogg' : 'audio/mpeg';
      res.writeHead(200, { 'content-type': type, 'x-request-id': 'req_speech' });
      const bytes = speechBytes(String(j.input));
      // Two writes: a relay must not assume one chunk.
      res.write(bytes.subarray(0, 1000));
      setTimeout(() => res.end(bytes.subarray(1000)), 5);
      return;
    }
    if (route === 'POST /v1/audio/transcriptions' || route === 'POST /v1/audio/translations') {
      const file = rec.form?.files.file;
      if (!file) return error(res, 400, 'file is required', 'file');
      const text = `heard ${file.size} bytes of ${file.name} (${file.sha256})`;
      if (rec.form?.fields.response_format === 'text') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end(text);
      }
      return json(res, { text, usage: { type: 'duration', seconds: 1 } });
    }
    if (route === 'POST /v1/moderations') {
      const inputs = Array.isArray(j.input) ? (j.input as unknown[]) : [j.input];
      const results = inputs.map((input) => {
        const flagged = String(typeof input === 'string' ? input : JSON.stringify(input)).includes('kill');
        return {
          flagged,
          categories: Object.fromEntries(CATEGORIES.map((c) => [c, flagged && c === 'violence'])),
          category_scores: Object.fromEntries(CATEGORIES.map((c) => [c, flagged && c === 'violence' ? 0.97 : 0.001])),
        };
      });
      return json(res, { id: 'modr-mock', model, results });
    }
    if (route === 'POST /v1/rerank') {
      const docs = (j.documents as unknown[]) ?? [];
      const words = String(j.query).toLowerCase().split(/\W+/).filter(Boolean);
      // Index order, not relevance order: the gateway sorts.
      const results = docs.map((d, index) => {
        const text = typeof d === 'string' ? d : String((d as { text?: unknown }).text);
        const hits = words.filter((w) => text.toLowerCase().includes(w)).length;
        return {
          index,
          relevance_score: Math.round((hits / Math.max(words.length, 1)) * 1000) / 1000 + index / 10_000,
          ...(j.return_documents ? { document: { text } } : {}),
        };
      });
      const top = typeof j.top_n === 'number' ? j.top_n : results.length;
      const kept = [...results]
        .sort((a, b) => b.relevance_score - a.relevance_score)
        .slice(0, top)
        .map((r) => r.index);
      return json(res, { id: 'rerank-mock', model, results: results.filter((r) => kept.includes(r.index)), usage: { search_units: 1 } });
    }

    // Files
    if (route === 'POST /v1/files') {
      const f = formData?.get('file');
      if (!f || typeof f === 'string') return error(res, 400, 'file is required', 'file');
      const fileId = addFile(Buffer.from(await f.arrayBuffer()), f.name, String(formData?.get('purpose')));
      return json(res, fileObject(files.get(fileId) as StoredFile));
    }
    if (route === 'GET /v1/files') {
      const purpose = url.searchParams.get('purpose');
      return json(res, list([...files.values()].filter((f) => !purpose || f.purpose === purpose).map(fileObject), url.searchParams));
    }
    if (seg[1] === 'v1' && seg[2] === 'files' && seg[3] && seg.length <= 5) {
      const file = files.get(seg[3]);
      if (!file) return error(res, 404, `No such File object: ${seg[3]}`, 'id');
      if (seg[4] === 'content' && method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': `attachment; filename="${file.filename}"` });
        return res.end(file.content);
      }
      if (seg.length === 4 && method === 'GET') return json(res, fileObject(file));
      if (seg.length === 4 && method === 'DELETE') {
        files.delete(file.id);
        return json(res, { id: file.id, object: 'file', deleted: true });
      }
    }

    // Batches
    if (route === 'POST /v1/batches') {
      if (!files.has(String(j.input_file_id))) return error(res, 400, `File ${String(j.input_file_id)} not found`, 'input_file_id');
      const batch = {
        id: id('batch_'),
        object: 'batch',
        endpoint: j.endpoint,
        errors: null,
        input_file_id: j.input_file_id,
        completion_window: j.completion_window,
        status: 'validating',
        output_file_id: null,
        error_file_id: null,
        created_at: NOW,
        in_progress_at: null,
        expires_at: NOW + 86_400,
        finalizing_at: null,
        completed_at: null,
        failed_at: null,
        expired_at: null,
        cancelling_at: null,
        cancelled_at: null,
        request_counts: { total: 0, completed: 0, failed: 0 },
        metadata: j.metadata ?? null,
      };
      batches.set(batch.id, batch);
      return json(res, batch);
    }
    if (route === 'GET /v1/batches') return json(res, list([...batches.values()], url.searchParams));
    if (seg[1] === 'v1' && seg[2] === 'batches' && seg[3]) {
      const batch = batches.get(seg[3]);
      if (!batch) return error(res, 404, `No batch found with id '${seg[3]}'.`, null, 'not_found');
      if (seg.length === 4 && method === 'GET') return json(res, batch);
      if (seg[4] === 'cancel' && method === 'POST') {
        Object.assign(batch, { status: 'cancelling', cancelling_at: NOW + 5 });
        return json(res, batch);
      }
    }

    // Fine-tuning
    if (route === 'POST /v1/fine_tuning/jobs') {
      const job = {
        id: id('ftjob-'),
        object: 'fine_tuning.job',
        model: j.model,
        created_at: NOW,
        finished_at: null,
        fine_tuned_model: null,
        organization_id: 'org-mock',
        result_files: [],
        status: 'queued',
        validation_file: j.validation_file ?? null,
        training_file: j.training_file,
        hyperparameters: { n_epochs: 'auto', batch_size: 'auto', learning_rate_multiplier: 'auto' },
        trained_tokens: null,
        error: null,
        seed: j.seed ?? 42,
        estimated_finish: null,
        integrations: [],
        metadata: j.metadata ?? null,
        method: { type: 'supervised' },
      };
      jobs.set(job.id, job);
      return json(res, job);
    }
    if (route === 'GET /v1/fine_tuning/jobs') return json(res, list([...jobs.values()], url.searchParams));
    if (seg[1] === 'v1' && seg[2] === 'fine_tuning' && seg[3] === 'jobs' && seg[4]) {
      const job = jobs.get(seg[4]);
      if (!job) return error(res, 404, `Could not find fine-tune job: ${seg[4]}`, 'fine_tune_id');
      if (seg.length === 5 && method === 'GET') return json(res, job);
      if (seg[5] === 'cancel' && method === 'POST') {
        job.status = 'cancelled';
        return json(res, job);
      }
      if (seg[5] === 'events' && method === 'GET') {
        const events = ['Validating training file', 'Fine-tuning job started', 'Step 1/10: training loss=1.2'].map((message, i) => ({
          id: `ftevent-${i}`,
          object: 'fine_tuning.job.event',
          created_at: NOW + i,
          level: 'info',
          message,
          type: 'message',
          data: {},
        }));
        return json(res, { ...list(events, url.searchParams), object: 'list' });
      }
      if (seg[5] === 'checkpoints' && method === 'GET') {
        const checkpoints = [1, 2].map((step) => ({
          id: `ftckpt_${step}`,
          object: 'fine_tuning.job.checkpoint',
          created_at: NOW + step,
          fine_tuned_model_checkpoint: `ft:${String(job.model)}:org:ckpt-step-${step * 10}`,
          fine_tuning_job_id: job.id,
          metrics: { step: step * 10, train_loss: 1 / step },
          step_number: step * 10,
        }));
        return json(res, list(checkpoints, url.searchParams));
      }
    }

    // Assistants, threads, messages, runs (OpenAI requires the beta header)
    if (seg[1] === 'v1' && (seg[2] === 'assistants' || seg[2] === 'threads')) {
      if (req.headers['openai-beta'] !== 'assistants=v2') {
        return error(res, 400, "You must provide the 'OpenAI-Beta' header to access the Assistants API.", null, 'invalid_beta');
      }
      if (route === 'POST /v1/assistants') {
        const a = {
          id: id('asst_'),
          object: 'assistant',
          created_at: NOW,
          name: j.name ?? null,
          description: null,
          model,
          instructions: j.instructions ?? null,
          tools: j.tools ?? [],
          metadata: j.metadata ?? {},
          top_p: 1,
          temperature: 1,
          response_format: 'auto',
        };
        assistants.set(a.id, a);
        return json(res, a);
      }
      if (route === 'GET /v1/assistants') return json(res, list([...assistants.values()], url.searchParams));
      if (seg[2] === 'assistants' && seg[3] && seg.length === 4) {
        const a = assistants.get(seg[3]);
        if (!a) return error(res, 404, `No assistant found with id '${seg[3]}'.`);
        if (method === 'GET') return json(res, a);
        if (method === 'POST') return json(res, Object.assign(a, j));
        if (method === 'DELETE') {
          assistants.delete(a.id);
          return json(res, { id: a.id, object: 'assistant.deleted', deleted: true });
        }
      }
      const newRun = (threadId: string, assistantId: unknown) => {
        const run = {
          id: id('run_'),
          object: 'thread.run',
          created_at: NOW,
          assistant_id: assistantId,
          thread_id: threadId,
          status: 'queued',
          model,
          instructions: null,
          tools: [],
          metadata: {},
          usage: null,
        };
        runs.set(run.id, run);
        return run;
      };
      const runAnswer = (run: Record<string, unknown>) => {
        if (j.stream) {
          return sse(
            res,
            [
              { event: 'thread.run.created', data: run },
              { event: 'thread.run.in_progress', data: { ...run, status: 'in_progress' } },
              { event: 'thread.run.completed', data: { ...run, status: 'completed' } },
              { event: 'done', data: '[DONE]' },
            ],
            false,
          );
        }
        return json(res, run);
      };
      if (route === 'POST /v1/threads' || route === 'POST /v1/threads/runs') {
        const t = { id: id('thread_'), object: 'thread', created_at: NOW, metadata: (j.metadata as Record<string, unknown>) ?? {}, tool_resources: {} };
        threads.set(t.id, t);
        messages.set(t.id, []);
        if (route === 'POST /v1/threads/runs') return runAnswer(newRun(t.id, j.assistant_id));
        return json(res, t);
      }
      const thread = seg[3] ? threads.get(seg[3]) : undefined;
      if (seg[2] === 'threads' && seg[3] && !thread) return error(res, 404, `No thread found with id '${seg[3]}'.`);
      if (thread) {
        if (seg.length === 4) {
          if (method === 'GET') return json(res, thread);
          if (method === 'POST') return json(res, Object.assign(thread, j));
          if (method === 'DELETE') {
            threads.delete(thread.id);
            return json(res, { id: thread.id, object: 'thread.deleted', deleted: true });
          }
        }
        const msgs = messages.get(thread.id) ?? [];
        if (seg[4] === 'messages' && seg.length === 5) {
          if (method === 'POST') {
            const m = {
              id: id('msg_'),
              object: 'thread.message',
              created_at: NOW,
              thread_id: thread.id,
              role: j.role,
              content: [{ type: 'text', text: { value: j.content, annotations: [] } }],
              assistant_id: null,
              run_id: null,
              attachments: [],
              metadata: {},
            };
            msgs.push(m);
            return json(res, m);
          }
          if (method === 'GET') return json(res, list(msgs, url.searchParams));
        }
        if (seg[4] === 'messages' && seg[5]) {
          const m = msgs.find((x) => x.id === seg[5]);
          if (!m) return error(res, 404, `No message found with id '${seg[5]}'.`);
          if (method === 'GET') return json(res, m);
          if (method === 'POST') return json(res, Object.assign(m, j));
          if (method === 'DELETE') {
            msgs.splice(msgs.indexOf(m), 1);
            return json(res, { id: m.id, object: 'thread.message.deleted', deleted: true });
          }
        }
        if (seg[4] === 'runs' && seg.length === 5) {
          if (method === 'POST') return runAnswer(newRun(thread.id, j.assistant_id));
          if (method === 'GET')
            return json(
              res,
              list(
                [...runs.values()].filter((r) => r.thread_id === thread.id),
                url.searchParams,
              ),
            );
        }
        if (seg[4] === 'runs' && seg[5]) {
          const run = runs.get(seg[5]);
          if (!run) return error(res, 404, `No run found with id '${seg[5]}'.`);
          if (seg.length === 6 && method === 'GET') return json(res, { ...run, status: run.status === 'queued' ? 'completed' : run.status });
          if (seg.length === 6 && method === 'POST') return json(res, Object.assign(run, j));
          if (seg[6] === 'cancel' && method === 'POST') return json(res, Object.assign(run, { status: 'cancelling' }));
          if (seg[6] === 'submit_tool_outputs' && method === 'POST') return runAnswer(Object.assign(run, { status: 'queued' }));
          if (seg[6] === 'steps') {
            const step = {
              id: 'step_1',
              object: 'thread.run.step',
              created_at: NOW,
              run_id: run.id,
              thread_id: thread.id,
              type: 'message_creation',
              status: 'completed',
              step_details: { type: 'message_creation', message_creation: { message_id: 'msg_x' } },
            };
            if (seg[7]) return seg[7] === step.id ? json(res, step) : error(res, 404, `No step found with id '${seg[7]}'.`);
            return json(res, list([step], url.searchParams));
          }
        }
      }
    }

    // Responses
    if (route === 'POST /v1/responses') {
      const text = `You said: ${typeof j.input === 'string' ? j.input : JSON.stringify(j.input)}`;
      const response = {
        id: id('resp_'),
        object: 'response',
        created_at: NOW,
        status: 'completed',
        model,
        output: [{ type: 'message', id: id('msg_'), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }],
        usage: {
          input_tokens: 5,
          output_tokens: 4,
          total_tokens: 9,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens_details: { reasoning_tokens: 0 },
        },
        metadata: j.metadata ?? {},
      };
      const input = (typeof j.input === 'string' ? [{ role: 'user', content: j.input }] : ((j.input as Array<Record<string, unknown>>) ?? [])).map((m) => ({
        id: id('msg_'),
        type: 'message',
        role: m.role,
        content: [{ type: 'input_text', text: typeof m.content === 'string' ? m.content : JSON.stringify(m.content) }],
      }));
      responses.set(response.id, { response, input });
      if (j.stream) {
        let n = 0;
        return sse(
          res,
          [
            {
              event: 'response.created',
              data: { type: 'response.created', sequence_number: n++, response: { ...response, status: 'in_progress', output: [] } },
            },
            ...text.split(' ').map((w, i) => ({
              event: 'response.output_text.delta',
              data: {
                type: 'response.output_text.delta',
                sequence_number: n++,
                item_id: response.output[0]?.id,
                output_index: 0,
                content_index: 0,
                delta: i ? ` ${w}` : w,
              },
            })),
            { event: 'response.completed', data: { type: 'response.completed', sequence_number: n++, response } },
          ],
          false,
        );
      }
      return json(res, response);
    }
    if (seg[1] === 'v1' && seg[2] === 'responses' && seg[3]) {
      const stored = responses.get(seg[3]);
      if (!stored) return error(res, 404, `Response with id '${seg[3]}' not found.`, null);
      if (seg.length === 4 && method === 'GET') return json(res, stored.response);
      if (seg.length === 4 && method === 'DELETE') {
        responses.delete(seg[3]);
        return json(res, { id: seg[3], object: 'response', deleted: true });
      }
      if (seg[4] === 'input_items' && method === 'GET') return json(res, list(stored.input, url.searchParams));
    }

    // Anything else: the answer set for it, else an echo of the request.
    const answer = raw.get(`${method} ${p}`) ?? raw.get('*');
    if (answer) {
      res.writeHead(answer.status, answer.headers);
      if (Array.isArray(answer.body)) {
        for (const chunk of answer.body) {
          res.write(chunk);
          await new Promise((r) => setTimeout(r, 2));
        }
        return res.end();
      }
      return res.end(answer.body);
    }
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream', 'x-echo-method': method });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    raw,
    delays,
    addFile,
    completeBatch(batchId, outputFileId) {
      const batch = batches.get(batchId);
      if (!batch) throw new Error(`no batch ${batchId}`);
      Object.assign(batch, {
        status: 'completed',
        output_file_id: outputFileId,
        completed_at: NOW + 60,
        request_counts: { total: 2, completed: 2, failed: 0 },
      });
    },
    reset() {
      received.length = 0;
      raw.clear();
      delays.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
