/**
 * The outbound HTTP port: how every provider, tool server, secret manager and guardrail vendor is
 * called. gateway/upstream.ts is the one implementation (SSRF-checked, credentials masked in the
 * answer); modules below the gateway take this interface so that they need not import it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';

export interface UpstreamRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array | undefined;
  /** Milliseconds to wait for response headers; a started body is never cut by it. */
  timeoutMs?: number | undefined;
  /** Aborts the call, e.g. when the client has gone. */
  signal?: AbortSignal | undefined;
  /**
   * Credentials masked in the answer besides those the request's headers and URL carry (which
   * always are): a target's key and secret options, also one that is only signed with.
   */
  secrets?: Iterable<string> | undefined;
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

export interface Upstream {
  send(req: UpstreamRequest): Promise<UpstreamResponse>;
  /** Closes pooled connections (tests, shutdown). */
  close(): void;
}
