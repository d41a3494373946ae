/**
 * Answer schemas as JSON Schema for the document: every schema the answer modules export is a
 * component named after its export (`apiKeyView` -> `#/components/schemas/ApiKeyView`), referenced
 * wherever an answer holds it; what is not named (a list of them) is written inline.
 */
import * as z from 'zod';
import * as access from './access.ts';
import * as common from './common.ts';
import * as gateway from './gateway.ts';
import * as mcp from './mcp.ts';
import * as observability from './observability.ts';
import * as prompts from './prompts.ts';
import * as routing from './routing.ts';

type Json = Record<string, unknown>;

const MODULES: readonly Record<string, unknown>[] = [common, access, routing, prompts, mcp, observability, gateway];

/** Names each exported schema in zod's registry, once per process (zod then writes it as a `$defs` entry). */
function nameSchemas(): void {
  const seen = new Map<string, unknown>();
  for (const mod of MODULES) {
    for (const [name, value] of Object.entries(mod)) {
      if (!(value instanceof z.ZodObject)) continue;
      const id = name.charAt(0).toUpperCase() + name.slice(1);
      if (seen.has(id) && seen.get(id) !== value) throw new Error(`Two answer schemas are named ${id}`);
      seen.set(id, value);
      const meta = z.globalRegistry.get(value);
      if (meta?.id !== id) z.globalRegistry.add(value, { ...meta, id });
    }
  }
}

/** Refs to the components, and without the safe-integer bounds zod gives every integer (noise to a reader). */
const toComponents = <T>(value: T): T =>
  JSON.parse(
    JSON.stringify(value)
      .replaceAll('"#/$defs/', '"#/components/schemas/')
      .replaceAll(`,"minimum":${Number.MIN_SAFE_INTEGER},"maximum":${Number.MAX_SAFE_INTEGER}`, ''),
  ) as T;

export class AnswerSchemas {
  /** The named schemas met so far, for `components.schemas`. */
  readonly components: Record<string, Json> = {};

  constructor() {
    nameSchemas();
  }

  /** The JSON Schema of an answer, its named parts moved to the components. */
  schemaOf(schema: z.ZodType): Json {
    const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output', unrepresentable: 'any', cycles: 'ref' }) as Json;
    const defs = (out.$defs ?? {}) as Record<string, Json>;
    delete out.$defs;
    delete out.$schema;
    for (const [id, def] of Object.entries(defs)) this.components[id] ??= toComponents(def);
    return toComponents(out);
  }
}
