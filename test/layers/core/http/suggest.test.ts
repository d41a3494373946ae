/** Slips of known names: the unknown-field hint and the admin path a mistyped one meant. */
import { describe, expect, it } from 'vitest';
import { ADMIN_PREFIXES } from '../../../../layers/core/src/http/prefixes.ts';
import { adminPathMeant } from '../../../../layers/core/src/http/surfaces.ts';
import { nearMiss, suggestion } from '../../../../layers/core/src/http/suggest.ts';

describe('suggestion', () => {
  it('names the nearest known field, camelCase and dashes forgiven', () => {
    expect(suggestion('expire_at', ['expires_at', 'name'])).toBe('expires_at');
    expect(suggestion('expiresAt', ['expires_at', 'name'])).toBe('expires_at');
    expect(suggestion('colour', ['expires_at', 'name'])).toBeUndefined();
  });
});

describe('nearMiss of an admin prefix', () => {
  it.each([
    ['config', 'configs'],
    ['Configs', 'configs'],
    ['audit_logs', 'audit-logs'],
    ['auditlogs', 'audit-logs'],
    ['policy', 'policies'],
    ['promt', 'prompts'],
    ['gaurdrails', 'guardrails'],
    ['log', 'logs'],
    ['openapi', 'openapi.json'],
    ['openapi.yaml', 'openapi.json'],
  ])('%s -> %s', (slip, prefix) => {
    expect(nearMiss(slip, ADMIN_PREFIXES)).toBe(prefix);
  });

  // Provider paths the passthrough serves must not read as slips.
  it.each([
    'configs',
    'models',
    'files',
    'evals',
    'projects',
    'conversations',
    'containers',
    'jobs',
    'dogs',
    'user',
    'users',
    'secrets',
    'vector_stores',
    'threads',
    'generation',
    'predictions',
    'deployments',
  ])('%s is no slip', (name) => {
    expect(nearMiss(name, ADMIN_PREFIXES)).toBeUndefined();
  });

  it('keeps the rest of the path and leaves providers’ own organisation APIs alone', () => {
    expect(adminPathMeant('/v1/config/prod/versions')).toBe('/v1/configs/prod/versions');
    expect(adminPathMeant('/v2/mcp-server/x/connections')).toBe('/v2/mcp-servers/x/connections');
    expect(adminPathMeant('/v1/organization/projects')).toBeUndefined();
    expect(adminPathMeant('/v1/organizations/workspaces')).toBeUndefined();
    expect(adminPathMeant('/v1/chat/completions')).toBeUndefined();
  });
});
