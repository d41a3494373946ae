/**
 * Validates an answer against a component schema of OpenAI's published OpenAPI document, as
 * vendored in openai-components.json (JSON Schema 2020-12, with @cfworker/json-schema).
 *
 * One adjustment, the same for every schema: a property the schema does not require may be
 * `null`. OpenAI's generated schemas leave nullability out of optional fields, but its API answers
 * `null` there (`"failed_at": null`, `"errors": null` in the Batch schema's own example; the SDKs
 * type those fields as optional or `Optional[...]`), and Gantry answers as the API does. Required
 * properties, types, enums and nested objects are checked as published.
 */
import { readFileSync } from 'node:fs';
import { Validator, type OutputUnit, type Schema } from '@cfworker/json-schema';

type Json = Record<string, unknown>;

const ROOT_ID = 'https://openai-openapi.vendored/components.json';

export const vendored = JSON.parse(readFileSync(new URL('./openai-components.json', import.meta.url), 'utf8')) as {
  source: { repository: string; commit: string; commit_date: string };
  components: { schemas: Record<string, Json> };
};

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A copy of the schema where every property not required may also be null. */
export function optionalMayBeNull(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(optionalMayBeNull);
  if (!isObject(schema)) return schema;
  const out: Json = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, optionalMayBeNull(v)]));
  if (isObject(out.properties)) {
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    out.properties = Object.fromEntries(Object.entries(out.properties).map(([k, v]) => [k, required.has(k) ? v : { anyOf: [v, { type: 'null' }] }]));
  }
  return out;
}

const root = { $id: ROOT_ID, components: optionalMayBeNull(vendored.components) } as Schema;
const validators = new Map<string, Validator>();

/** The problems of `value` against the named component schema (empty when it conforms). */
export function openaiSchemaErrors(name: string, value: unknown): string[] {
  if (!(name in vendored.components.schemas)) throw new Error(`${name} is not vendored in openai-components.json`);
  let v = validators.get(name);
  if (!v) {
    v = new Validator({ $ref: `${ROOT_ID}#/components/schemas/${name}` }, '2020-12', false);
    v.addSchema(root, ROOT_ID);
    validators.set(name, v);
  }
  const result = v.validate(value);
  return result.valid ? [] : result.errors.map((e: OutputUnit) => `${e.instanceLocation}: ${e.error}`);
}
