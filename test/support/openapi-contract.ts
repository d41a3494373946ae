/**
 * Checks real requests and answers against Gantry's own OpenAPI document (`GET /v1/openapi.json`):
 * each call names its operation (method and path template); when the server accepts it, the JSON
 * body sent is validated against the operation's request schema and the answer's body against the
 * schema it documents for the answer's status (JSON Schema 2020-12, @cfworker/json-schema); every
 * operation checked is remembered, so a test can say which ones it covered.
 */
import { Validator, type OutputUnit, type Schema } from '@cfworker/json-schema';

type Json = Record<string, unknown>;

export interface OpenApiDoc {
  paths: Record<
    string,
    Record<
      string,
      { requestBody?: { content?: Record<string, { example?: unknown }> }; responses: Record<string, { content?: Record<string, { schema?: Json }> }> }
    >
  >;
  components: { schemas: Record<string, Json> };
}

const ROOT_ID = 'https://gantry.local/openapi.json';

export interface Checked {
  status: number;
  headers: Headers;
  /** The JSON body (undefined for other content types). */
  json: Json;
}

export class ContractChecker {
  readonly covered = new Set<string>();
  readonly #validators = new Map<string, Validator>();
  readonly #doc: OpenApiDoc;
  readonly #url: string;

  constructor(doc: OpenApiDoc, url: string) {
    this.#doc = doc;
    this.#url = url;
  }

  /** The operation's documented request example, if any. */
  example(method: string, template: string): unknown {
    return this.#doc.paths[template]?.[method.toLowerCase()]?.requestBody?.content?.['application/json']?.example;
  }

  /** Every operation with a JSON request example, as `METHOD template`. */
  examples(): string[] {
    return Object.entries(this.#doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => op.requestBody?.content?.['application/json']?.example !== undefined)
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
  }

  /** The path templates of the operations with this method. */
  operations(method: string): string[] {
    return Object.entries(this.#doc.paths)
      .filter(([, item]) => item[method.toLowerCase()] !== undefined)
      .map(([path]) => path);
  }

  /** Every operation, as `METHOD template`. */
  operationKeys(): string[] {
    return Object.entries(this.#doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
  }

  /** The problems of `body` against what the operation documents for `status` (empty: it conforms). */
  problems(method: string, template: string, status: number, contentType: string, body: unknown): string[] {
    const op = this.#doc.paths[template]?.[method.toLowerCase()];
    if (!op) return [`${method} ${template} is not in the document`];
    const response = op.responses[String(status)];
    if (!response) return [`${method} ${template} documents no ${status} answer`];
    const media = Object.keys(response.content ?? {}).find((t) => contentType.startsWith(t));
    if (!media) return [`${method} ${template} documents no ${contentType} answer for ${status}`];
    const key = `${method} ${template} ${status} ${media}`;
    let v = this.#validators.get(key);
    if (!v) {
      v = new Validator(
        { $ref: `${ROOT_ID}#/paths/${pointer(template)}/${method.toLowerCase()}/responses/${status}/content/${pointer(media)}/schema` },
        '2020-12',
        false,
      );
      v.addSchema({ ...this.#doc, $id: ROOT_ID } as unknown as Schema, ROOT_ID);
      this.#validators.set(key, v);
    }
    if (!isJson(media)) return typeof body === 'string' ? [] : ['a non-JSON answer read as JSON'];
    const result = v.validate(body);
    return result.valid ? [] : result.errors.map((e: OutputUnit) => `${e.instanceLocation}: ${e.error}`);
  }

  /** The problems of a JSON request body the server accepted, against the operation's documented request schema. */
  requestProblems(method: string, template: string, body: unknown): string[] {
    const op = this.#doc.paths[template]?.[method.toLowerCase()] as { requestBody?: { content?: Record<string, { schema?: Json }> } } | undefined;
    if (body === undefined || typeof body === 'string' || !op?.requestBody?.content?.['application/json']?.schema) return [];
    const key = `${method} ${template} request`;
    let v = this.#validators.get(key);
    if (!v) {
      v = new Validator(
        { $ref: `${ROOT_ID}#/paths/${pointer(template)}/${method.toLowerCase()}/requestBody/content/${pointer('application/json')}/schema` },
        '2020-12',
        false,
      );
      v.addSchema({ ...this.#doc, $id: ROOT_ID } as unknown as Schema, ROOT_ID);
      this.#validators.set(key, v);
    }
    const result = v.validate(body);
    return result.valid ? [] : result.errors.map((e: OutputUnit) => `request ${e.instanceLocation}: ${e.error}`);
  }

  /**
   * Calls the operation (`{name}` in the template filled from `params`) and checks the answer
   * against the document; the status is asserted by the caller.
   */
  async call(
    method: string,
    template: string,
    opts: {
      params?: Record<string, string>;
      body?: unknown;
      form?: { body: Uint8Array<ArrayBuffer>; contentType: string };
      headers?: Record<string, string>;
      query?: string;
    } = {},
  ): Promise<Checked & { problems: string[] }> {
    const path = template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, name: string) => {
      const value = opts.params?.[name];
      if (value === undefined) throw new Error(`${template}: no value for {${name}}`);
      return encodeURIComponent(value);
    });
    const sent = opts.form
      ? { body: opts.form.body }
      : opts.body === undefined
        ? {}
        : { body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) };
    const res = await fetch(`${this.#url}${path}${opts.query ? `?${opts.query}` : ''}`, {
      method,
      headers: { 'content-type': opts.form?.contentType ?? 'application/json', ...opts.headers },
      ...sent,
    });
    const contentType = res.headers.get('content-type') ?? '';
    const text = await res.text();
    const body: unknown = isJson(contentType) ? JSON.parse(text) : text;
    const problems = res.ok ? [...this.requestProblems(method, template, opts.body), ...this.problems(method, template, res.status, contentType, body)] : [];
    if (res.ok && problems.length === 0) this.covered.add(`${method} ${template}`);
    return { status: res.status, headers: res.headers, json: (typeof body === 'object' && body !== null ? body : {}) as Json, problems };
  }
}

/** JSON (`application/json`, `...+json`), not JSON lines (`application/jsonl`). */
const isJson = (contentType: string): boolean => /^application\/([\w.-]+\+)?json\b/.test(contentType);

/** A JSON pointer segment. */
const pointer = (s: string): string => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'));
