/**
 * Path prefixes under /v1 served by the admin function. API Gateway routes these to the admin
 * Lambda; everything else under /v1 goes to the gateway Lambda. Add a prefix here when an admin
 * resource is added, and the stack routes it. `openapi.json` and `docs` (the API's description and
 * reference page) are here too: they are no gateway route and must not reach the passthrough.
 */
export const ADMIN_PREFIXES: readonly string[] = [
  'api-keys',
  'admin',
  'workspaces',
  'organisation',
  'configs',
  'guardrails',
  'prompts',
  'collections',
  'labels',
  'model-configs',
  'integrations',
  'secret-references',
  'mcp-integrations',
  'mcp-servers',
  'providers',
  'virtual-keys',
  'policies',
  'audit-logs',
  'feedback',
  'logs',
  'analytics',
  'scim',
  'console',
  'openapi.json',
  'docs',
];

/** Prefixes under /v2 (all admin): the MCP server connection routes (docs/design/spec.md#surfaces-and-paths). */
export const ADMIN_V2_PREFIXES: readonly string[] = ['mcp-servers'];

/**
 * Paths below an admin prefix that the gateway function serves instead (a prompt's completions
 * run the gateway pipeline and stream). `{name}` is one path segment. API Gateway cannot put a
 * greedy `{proxy+}` beside a `{name}` resource, so such a prefix is routed as `{name}` and
 * `{name}/{proxy+}` (admin) plus these paths (gateway).
 */
export const GATEWAY_PATHS_UNDER_ADMIN: readonly string[] = ['prompts/{promptId}/completions'];

/**
 * First path segments that look like a slip of an admin prefix but are providers' own APIs, which
 * the passthrough serves: OpenAI's Administration API (`/v1/organization/...`) and Anthropic's Admin
 * API (`/v1/organizations/...`). Every other near-miss of an admin prefix (`/v1/config`) answers
 * 404 AB02 naming the prefix (http/surfaces.ts).
 */
export const PROVIDER_PREFIXES_LIKE_ADMIN: readonly string[] = ['organization', 'organizations'];
