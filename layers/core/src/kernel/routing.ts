/**
 * The routing config (x-gw-config inline JSON, a saved config, or a key's default), as validated.
 * Grammar: docs/design/reference-behaviour.md#configs. Every node is itself a config: nesting to any
 * depth, with a leaf being a node without `targets`.
 */

import type { TargetBudget } from './lifecycle.ts';

/** Whether a target takes passthrough requests (any `/v1` path no gateway endpoint serves). */
export const PASSTHROUGH_SETTINGS = ['allow', 'deny'] as const;
export type PassthroughSetting = (typeof PASSTHROUGH_SETTINGS)[number];

export type StrategyMode = 'single' | 'loadbalance' | 'fallback' | 'conditional';

export interface Condition {
  /** A MongoDB-like query over `metadata.*`, `params.*` and `url.pathname`. */
  query: Record<string, unknown>;
  /** Name of the target to use when the query matches. */
  then: string;
}

export interface Strategy {
  mode: StrategyMode;
  /** Fallback only: continue to the next target only for these statuses (absent: any non-2xx). */
  on_status_codes?: number[];
  conditions?: Condition[];
  default?: string;
}

export interface RetrySettings {
  /** Extra tries after the first; 0..5. */
  attempts: number;
  /** Statuses worth retrying; default 429, 500, 502, 503, 504. */
  on_status_codes?: number[];
  use_retry_after_header?: boolean;
}

export interface CacheSettings {
  mode: 'simple' | 'semantic';
  /** Seconds an entry may be served. */
  max_age?: number;
  /** Semantic only: cosine similarity a hit needs (default 0.95). */
  similarity_threshold?: number;
  /** Semantic only: the embedding provider used to embed the last user turn. */
  embedding?: { provider: string; model: string; api_key?: string; custom_host?: string };
}

export interface ConfigNode {
  strategy?: Strategy;
  targets?: ConfigNode[];
  name?: string;
  /** Load-balancing weight, >= 0, default 1; 0 is never chosen. */
  weight?: number;
  provider?: string;
  api_key?: string;
  virtual_key?: string;
  override_params?: Record<string, unknown>;
  retry?: RetrySettings;
  /** Milliseconds per attempt until response headers. */
  request_timeout?: number;
  cache?: CacheSettings;
  custom_host?: string;
  forward_headers?: string[];
  strict_openai_compliance?: boolean;
  /** `deny`: no passthrough request is sent through this node's targets (403); default `allow`. */
  passthrough?: PassthroughSetting;
  before_request_hooks?: unknown[];
  after_request_hooks?: unknown[];
  input_guardrails?: unknown[];
  output_guardrails?: unknown[];
  /** Provider options: aws_*, vertex_*, azure_*, openai_project, openai_organization ... */
  [option: string]: unknown;
}

/** One leaf target with everything it inherited, ready to call. */
export interface ResolvedTarget {
  /** JSON path of the target: `config`, `config.targets[1]`, `config.targets[0].targets[2]`. */
  path: string;
  name?: string;
  provider?: string;
  api_key?: string;
  virtual_key?: string;
  override_params: Record<string, unknown>;
  retry?: RetrySettings;
  request_timeout?: number;
  cache?: CacheSettings;
  custom_host?: string;
  forward_headers?: string[];
  strict_openai_compliance: boolean;
  /** Inherited; absent means `allow`. */
  passthrough?: PassthroughSetting;
  /** Provider options (keys such as aws_region, azure_resource_name ...). */
  options: Record<string, unknown>;
  /** Resolved from a managed provider or virtual key: its options come from the administrator only. */
  managed?: boolean;
  /** A managed provider's own usage limit, admitted by the hooks before the target is called. */
  budget?: TargetBudget;
}

/** What conditions are evaluated against. */
export interface ConditionContext {
  metadata: Record<string, unknown>;
  params: Record<string, unknown>;
  url: { pathname: string };
}
