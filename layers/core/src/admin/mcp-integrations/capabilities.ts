/** Capability lists of integrations and servers: filtered by type, paged, with counts by type. */
import * as z from 'zod';
import type { McpCapability, McpCapabilityType } from '../../store/mcp.ts';
import { page, parsePaging } from '../pagination.ts';
import { parseWith } from '../route.ts';

const typeQuery = z.object({ type: z.enum(['tool', 'prompt', 'resource'], { error: 'must be one of tool, prompt, resource' }).optional() });

export interface CapabilityView {
  name: string;
  type: McpCapabilityType;
  title: string | null;
  description: string | null;
  enabled: boolean;
  /** False when the last sync no longer found it on the server. */
  available: boolean;
  schema_hash: string | null;
  input_schema: Record<string, unknown> | null;
  created_at: string;
  last_updated_at: string;
}

export const toCapabilityView = (c: McpCapability): CapabilityView => ({
  name: c.name,
  type: c.type,
  title: c.title ?? null,
  description: c.description ?? null,
  enabled: c.enabled,
  available: c.available !== false,
  schema_hash: c.schema_hash ?? null,
  input_schema: c.input_schema ?? null,
  created_at: c.created_at,
  last_updated_at: c.last_updated_at,
});

export function capabilityList<V extends { type: McpCapabilityType }>(all: readonly V[], query: URLSearchParams) {
  const paging = parsePaging(query);
  const { type } = parseWith(typeQuery, { type: query.get('type') ?? undefined });
  const counts = { tool: 0, prompt: 0, resource: 0 };
  for (const c of all) counts[c.type]++;
  const listed = type ? all.filter((c) => c.type === type) : all;
  const body = page(listed, paging);
  return { ...body, counts, has_more: (paging.current_page + 1) * paging.page_size < listed.length };
}
