/**
 * A JWKS server for JWT tests: a real HTTP server publishing public keys generated with jose, and
 * a signer for tokens with those keys (or keys it does not publish). `rotate` replaces the
 * published key set, as an identity provider does when it rotates its signing keys.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

export const JWT_ISSUER = 'https://idp.test/';
export const JWT_AUDIENCE = 'gantry-test';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: Record<string, unknown>;
}

export interface SignOptions {
  /** A key from `newKey()`; default: the first published key. */
  key?: SigningKey;
  issuer?: string;
  audience?: string;
  /** Unix seconds; default now per the given clock. */
  iat?: number;
  /** Seconds from `iat`; default 3600. */
  ttl?: number;
  kid?: string | null;
}

export interface JwksServer {
  url: string;
  /** Requests the server answered. */
  fetches: number;
  /** The keys published now. */
  published: SigningKey[];
  newKey(kid: string): Promise<SigningKey>;
  /** Publishes exactly these keys from now on. */
  publish(keys: SigningKey[]): void;
  sign(claims: JWTPayload, opts?: SignOptions): Promise<string>;
  close(): Promise<void>;
}

export async function startJwks(nowMs: () => number = Date.now): Promise<JwksServer> {
  const make = async (kid: string): Promise<SigningKey> => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
  };
  const state: JwksServer = {
    url: '',
    fetches: 0,
    published: [await make('key-1')],
    newKey: make,
    publish(keys) {
      state.published = keys;
    },
    async sign(claims, opts = {}) {
      const key = opts.key ?? state.published[0];
      if (!key) throw new Error('no key to sign with');
      const iat = opts.iat ?? Math.floor(nowMs() / 1000);
      const header: { alg: string; kid?: string } = { alg: 'ES256' };
      const kid = opts.kid === undefined ? key.kid : opts.kid;
      if (kid !== null) header.kid = kid;
      return new SignJWT(claims)
        .setProtectedHeader(header)
        .setIssuer(opts.issuer ?? JWT_ISSUER)
        .setAudience(opts.audience ?? JWT_AUDIENCE)
        .setIssuedAt(iat)
        .setExpirationTime(iat + (opts.ttl ?? 3600))
        .sign(key.privateKey);
    },
    close: () => Promise.resolve(),
  };
  const server = http.createServer((_req, res) => {
    state.fetches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: state.published.map((k) => k.jwk) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return state;
}

/** The environment that turns JWT authentication on against this server. */
export const jwtEnv = (jwks: JwksServer): Record<string, string> => ({
  GW_JWKS_URL: jwks.url,
  GW_JWT_ISSUER: JWT_ISSUER,
  GW_JWT_AUDIENCE: JWT_AUDIENCE,
  GW_JWKS_COOLDOWN_SECONDS: '0',
});
