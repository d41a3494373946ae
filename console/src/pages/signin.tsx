/**
 * Sign-in: the key is sent once to POST /v1/console/session and forgotten; the browser keeps only
 * the HttpOnly session cookie the server sets. The field is cleared whatever the answer.
 */
import { useState } from 'preact/hooks';
import { signIn, type Session } from '../session.ts';
import { ErrorNote, Field, useSubmit } from '../ui.tsx';

export function SignIn({ onSession }: { onSession: (s: Session) => void }) {
  const [key, setKey] = useState('');
  const [kind, setKind] = useState<'api_key' | 'id_token'>('api_key');
  const { error, busy, submit } = useSubmit(async () => {
    const entered = key;
    setKey('');
    onSession(await signIn(kind === 'api_key' ? { api_key: entered } : { id_token: entered }));
  });
  return (
    <section class="card">
      <h1>Sign in to Gantry</h1>
      <p>Enter an admin or workspace API key. It is exchanged for a session once and is not kept in the browser.</p>
      <form onSubmit={submit}>
        <fieldset class="choice">
          <legend>Sign in with</legend>
          <label>
            <input type="radio" name="kind" checked={kind === 'api_key'} onChange={() => setKind('api_key')} /> an API key
          </label>
          <label>
            <input type="radio" name="kind" checked={kind === 'id_token'} onChange={() => setKind('id_token')} /> an OIDC ID token (where JWT sign-in is
            configured)
          </label>
        </fieldset>
        <Field label={kind === 'api_key' ? 'API key' : 'ID token'} name={kind} error={error}>
          {(id, describedBy) => (
            <input
              id={id}
              name={kind}
              type="password"
              autoComplete="off"
              required
              value={key}
              aria-describedby={describedBy}
              onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <ErrorNote error={error} shown={[kind]} />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </section>
  );
}
