/**
 * What the pipeline needs to know about one endpoint: its type, method, how its body is read and
 * validated, its path parameters, and whether its answers may stream or be cached. Every unified
 * endpoint and the passthrough are one of these; the pipeline has no per-endpoint code.
 */
import type { EndpointType } from '../providers/types.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A multipart form as validation sees it: text fields, and the files' names and sizes only. */
export interface FormSummary {
  fields: Record<string, string>;
  files: Record<string, Array<{ filename: string; size: number; type: string }>>;
}

/**
 * How the request body is read:
 * - `json`: a JSON object, validated, sent as the client wrote it (unless override_params or
 *   defaults change it);
 * - `multipart`: multipart/form-data, its text fields validated, sent byte for byte with the
 *   client's content type (and so its boundary);
 * - `none`: no body (GET, DELETE);
 * - `raw`: whatever came (passthrough), sent byte for byte.
 */
export type BodyKind = 'json' | 'multipart' | 'none' | 'raw';

/**
 * How a route takes a saved prompt: rendered into a chat request, into a Responses `input`, or
 * into a realtime session's `instructions` (with the workspace's client secret policy).
 */
export type PromptCall = 'completions' | 'responses' | 'realtime';

export interface EndpointSpec {
  endpoint: EndpointType;
  method: HttpMethod;
  body: BodyKind;
  /** `json`: validates the parsed body; throws ValidationError naming the field. */
  validate?(body: Record<string, unknown>): void;
  /** `multipart`: validates the form's text fields and files; throws ValidationError. */
  validateForm?(form: FormSummary): void;
  /** The largest body accepted (413 above it); absent: the default of its body kind (request-body.ts). */
  maxBodyBytes?: number;
  /** `json`: an empty body is allowed and sent as no body (assistants' cancel, say). */
  optionalBody?: boolean;
  /**
   * The path below the provider's template for this endpoint, for endpoint families that share
   * one template (assistants): `/threads/{thread_id}/runs`. Absent: the template itself.
   */
  path?: string;
  /** Path parameters, filled into the provider's path template URL-encoded. */
  params?: readonly string[];
  /** The answer is a server-sent event stream when the body says `stream: true`. */
  stream?: boolean;
  /** Idempotent by nature: a config's `cache` applies. */
  cacheable?: boolean;
  /** Client headers always forwarded to the provider (lower case), e.g. `openai-beta`. */
  forwardHeaders?: readonly string[];
  /** `json`: defaults (docs/design/spec.md#defaults-gantry-fills-in), set when the client leaves them out. */
  defaults?: Readonly<Record<string, unknown>>;
  /** The body is a prompt call, rendered into the request before it is read (prompt-input.ts). */
  prompt?: PromptCall;
  /** `json`: where the body names its model when not in `model` (client secrets: `session.model`). */
  modelOf?(body: Readonly<Record<string, unknown>>): unknown;
  /** Where `modelOf` reads, as errors name it (`session.model`). */
  modelField?: string;
  /** Rewrites a 2xx JSON answer (rerank sorts its results); the rest pass untouched. */
  transformAnswer?(answer: Record<string, unknown>, provider: string | undefined): Record<string, unknown>;
}
