/**
 * Path prefixes under /v1 served by the admin function. API Gateway routes these to the admin
 * Lambda; everything else under /v1 goes to the gateway Lambda. Add a prefix here when an admin
 * resource is added, and the stack routes it. `openapi.json` and `docs` (the API's description and
 * reference page) are here too: they are no gateway route and must not reach the passthrough.
 */
export const ADMIN_PREFIXES: readonly string[] = ['api-keys', 'admin', 'workspaces', 'organisation', 'configs', 'guardrails', 'prompts', 'collections', 'labels', 'model-configs', 'integrations', 'secret-references', 'providers', 'virtual-keys', 'policies', 'audit-logs', 'feedback', 'logs', 'analytics', 'scim', 'openapi.json', 'docs'];
