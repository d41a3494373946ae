/**
 * JWT authentication (an add-on, docs/design/spec.md#authentication): a token signed by the organisation's identity provider,
 * checked with jose against the JWKS at GW_JWKS_URL (cached; a token naming an unknown key id
 * makes jose fetch the set again, so rotated keys are picked up), with issuer, audience and expiry
 * checks. Failures name their cause.
 *
 * Claims: `sub` (user id, required), `email`, `role` (owner, admin, manager or member, required),
 * `workspace_id` (id or slug; required for managers and members), `organisation_id` (optional;
 * the deployment's organisation when absent), `scope` (space-separated) or `scopes` (array or
 * space-separated), and `auth_time` or `iat` for the session age.
 */
import type { JWTPayload } from 'jose';

type Jose = typeof import('jose');
/** jose is loaded on the first JWT only: API-key requests (most of them) never pay for it. */
let jose: Promise<Jose> | undefined;
const loadJose = (): Promise<Jose> => (jose ??= import('jose'));
import type { JwtConfig } from '../config.ts';
import { AuthenticationError, UpstreamError } from '../http/errors.ts';
import type { Clock } from '../ports/clock.ts';
import { ROLES, type Role } from '../kernel/principal.ts';

/** Three base64url segments: what a compact JWS looks like (Gantry keys start with `gw_` and have no dots). */
export const looksLikeJwt = (value: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(value);

/** Asymmetric algorithms only: a JWKS publishes public keys. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** Seconds of clock skew tolerated on exp, nbf and iat. */
export const CLOCK_TOLERANCE_SECONDS = 30;

export interface JwtIdentity {
  subject: string;
  email: string | null;
  role: Role;
  organisationId: string | null;
  /** Id or slug as the token names it. */
  workspace: string | null;
  scopes: string[];
  /** Unix seconds the session started (`auth_time`, else `iat`); null when the token says neither. */
  sessionStartedAt: number | null;
}

const invalid = (message: string) =>
  new AuthenticationError(message, { headers: { 'www-authenticate': `Bearer error="invalid_token", error_description="${message.replace(/["\\]/g, '')}"` } });

function scopesOf(payload: JWTPayload): string[] {
  const raw = payload.scopes ?? payload.scope;
  if (Array.isArray(raw)) return raw.filter((s): s is string => typeof s === 'string');
  if (typeof raw === 'string') return raw.split(/\s+/).filter(Boolean);
  return [];
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

export class JwtVerifier {
  readonly #config: JwtConfig;
  readonly #clock: Clock;
  #jwks: ReturnType<Jose['createRemoteJWKSet']> | undefined;

  constructor(config: JwtConfig, clock: Clock) {
    this.#config = config;
    this.#clock = clock;
  }

  /** Verifies a compact JWT and reads its identity claims; throws 401 AB05 naming the problem. */
  async verify(token: string): Promise<JwtIdentity> {
    const j = await loadJose();
    // One key set per verifier: jose caches it and refetches on an unknown key id.
    this.#jwks ??= j.createRemoteJWKSet(new URL(this.#config.jwksUrl), {
      cacheMaxAge: this.#config.cacheMaxAgeMs,
      cooldownDuration: this.#config.cooldownMs,
    });
    let payload: JWTPayload;
    try {
      ({ payload } = await j.jwtVerify(token, this.#jwks, {
        issuer: this.#config.issuer,
        audience: this.#config.audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(this.#clock.now()),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      throw this.#describe(err, token, j);
    }
    const role = payload.role;
    if (typeof role !== 'string' || !ROLES.includes(role as Role)) {
      throw invalid(`The token's role claim must be one of ${ROLES.join(', ')}`);
    }
    const workspace = str(payload.workspace_id);
    if ((role === 'manager' || role === 'member') && !workspace) {
      throw invalid(`The token's workspace_id claim is required for the role ${role}`);
    }
    const started = typeof payload.auth_time === 'number' ? payload.auth_time : typeof payload.iat === 'number' ? payload.iat : null;
    return {
      subject: payload.sub as string,
      email: str(payload.email),
      role: role as Role,
      organisationId: str(payload.organisation_id),
      workspace: role === 'manager' || role === 'member' ? workspace : null,
      scopes: scopesOf(payload),
      sessionStartedAt: started,
    };
  }

  #describe(err: unknown, token: string, j: Jose): Error {
    const { errors, decodeProtectedHeader } = j;
    if (err instanceof errors.JWTExpired) {
      const exp = typeof err.payload.exp === 'number' ? ` at ${new Date(err.payload.exp * 1000).toISOString()}` : '';
      return invalid(`The token expired${exp}: sign in again`);
    }
    if (err instanceof errors.JWSSignatureVerificationFailed) return invalid("The token's signature is invalid");
    if (err instanceof errors.JWKSNoMatchingKey) {
      let kid = 'none';
      try {
        kid = decodeProtectedHeader(token).kid ?? 'none';
      } catch {
        // unreadable header: reported as no kid
      }
      return invalid(`No key in the JWKS matches the token's key id (kid ${kid})`);
    }
    if (err instanceof errors.JWKSMultipleMatchingKeys) return invalid('Several JWKS keys match the token: it must name its key id (kid)');
    if (err instanceof errors.JWTClaimValidationFailed) {
      const got = err.payload[err.claim];
      if (err.claim === 'aud') return invalid(`The token's audience ${JSON.stringify(got ?? null)} is not ${this.#config.audience.join(' or ')}`);
      if (err.claim === 'iss') return invalid(`The token's issuer ${JSON.stringify(got ?? null)} is not ${this.#config.issuer}`);
      if (err.claim === 'nbf') return invalid('The token is not valid yet (nbf)');
      if (err.reason === 'missing') return invalid(`The token lacks the ${err.claim} claim`);
      return invalid(`The token's ${err.claim} claim is invalid`);
    }
    if (err instanceof errors.JOSEAlgNotAllowed) return invalid(`The token's algorithm is not allowed (use one of ${ALGORITHMS.join(', ')})`);
    if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return invalid('The token is malformed');
    if (
      err instanceof errors.JWKSTimeout ||
      err instanceof errors.JWKSInvalid ||
      err instanceof TypeError ||
      (err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC')
    ) {
      return new UpstreamError(503, `The JWKS at ${this.#config.jwksUrl} could not be read: try again`, { cause: err });
    }
    return invalid('The token could not be verified');
  }
}
