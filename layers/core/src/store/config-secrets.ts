/**
 * Secrets written into saved configs (`api_key` of a config or of any target, and any other field the
 * redaction list names) are stored as ciphertext bound to the config, `{"$sealed": "...", "mask":
 * "****abcd"}`, answered masked and opened only by the gateway. Stays free of zod: the gateway
 * bundles it.
 */
import { isSecretKey } from '../security/redact.ts';
import { CipherError, type Cipher, type CipherContext } from '../ports/cipher.ts';

const SEALED = '$sealed';

interface SealedValue {
  [SEALED]: string;
  mask: string;
}

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSealed = (v: unknown): v is SealedValue => isRecord(v) && typeof v[SEALED] === 'string' && typeof v.mask === 'string';
/** `key` alone is a name in configs (conditions, metadata), never a credential. */
const isSecretField = (name: string): boolean => name !== 'key' && isSecretKey(name);

/** What an answer shows of a secret: its last four characters at most. */
export const maskSecret = (secret: string): string => (secret.length > 12 ? `****${secret.slice(-4)}` : '****');

/** The cipher context of a config's secrets: a ciphertext copied to another config does not open there. */
export const configSecretContext = (r: { organisation_id: string; id: string }): CipherContext => ({
  purpose: 'config-secret',
  organisation_id: r.organisation_id,
  config_id: r.id,
});

/** Rebuilds `node`, replacing values by `leaf(value, name, previous)` for secret fields, at any depth. */
async function mapSecrets(node: unknown, previous: unknown, leaf: (value: unknown, previous: unknown) => Promise<unknown> | unknown): Promise<unknown> {
  if (Array.isArray(node)) {
    const before = Array.isArray(previous) ? previous : [];
    return Promise.all(node.map((v, i) => mapSecrets(v, before[i], leaf)));
  }
  if (!isRecord(node) || isSealed(node)) return node;
  const before = isRecord(previous) ? previous : {};
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = isSecretField(k) && (typeof v === 'string' || isSealed(v)) ? await leaf(v, before[k]) : await mapSecrets(v, before[k], leaf);
  }
  return out;
}

/**
 * The config as stored: every plain secret encrypted. A value equal to the mask of the secret at the
 * same place in `previous` (a client saving back what it read) keeps that secret.
 */
export async function sealConfigSecrets(config: Json, cipher: Cipher, context: CipherContext, previous?: Json): Promise<Json> {
  return (await mapSecrets(config, previous, async (value, before) => {
    if (isSealed(value)) return value;
    const plain = value as string;
    if (isSealed(before) && before.mask === plain) return before;
    return { [SEALED]: await cipher.encrypt(plain, context), mask: maskSecret(plain) } satisfies SealedValue;
  })) as Json;
}

/** The config as answered: sealed secrets as their mask; a plain one stored before encryption, masked too. */
export async function maskConfigSecrets(config: Json): Promise<Json> {
  return (await mapSecrets(config, undefined, (value) => (isSealed(value) ? value.mask : maskSecret(value as string)))) as Json;
}

/** The config as the gateway uses it: every sealed secret decrypted. */
export async function openConfigSecrets(config: Json, cipher: Cipher, context: CipherContext): Promise<Json> {
  return (await mapSecrets(config, undefined, async (value) => {
    if (!isSealed(value)) return value;
    try {
      return await cipher.decrypt(value[SEALED], context);
    } catch (err) {
      if (err instanceof CipherError)
        throw new CipherError(`A secret of config ${context.config_id ?? ''} cannot be decrypted (${err.message}): save the config again with the key`);
      throw err;
    }
  })) as Json;
}
