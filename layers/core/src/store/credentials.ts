/**
 * Sealing credentials with the cipher: the plaintext never reaches the table. Apart from the
 * schemas in common.ts because the gateway opens credentials too and must not bundle those.
 */
import { CipherError, type Cipher, type CipherContext } from '../ports/cipher.ts';

/** What is encrypted: the key and the secret configuration fields. */
export interface Credentials {
  key?: string;
  config: Record<string, unknown>;
}

export const integrationContext = (organisationId: string, integrationId: string): CipherContext => ({
  organisation_id: organisationId,
  integration_id: integrationId,
});

export const virtualKeyContext = (organisationId: string, virtualKeyId: string): CipherContext => ({
  organisation_id: organisationId,
  virtual_key_id: virtualKeyId,
});

/** One ciphertext for the key and the secret fields; null when there is nothing secret. */
export async function sealCredentials(cipher: Cipher, context: CipherContext, creds: Credentials): Promise<string | null> {
  if (creds.key === undefined && Object.keys(creds.config).length === 0) return null;
  return cipher.encrypt(JSON.stringify(creds), context);
}

export async function openCredentials(cipher: Cipher, secret: string | null, context: CipherContext): Promise<Credentials> {
  if (secret === null) return { config: {} };
  const parsed = JSON.parse(await cipher.decrypt(secret, context)) as Partial<Credentials>;
  if (typeof parsed !== 'object' || parsed === null) throw new CipherError('The decrypted credentials are not an object');
  return { ...(typeof parsed.key === 'string' ? { key: parsed.key } : {}), config: parsed.config ?? {} };
}
