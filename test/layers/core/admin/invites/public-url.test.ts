/**
 * Invite links point at the configured public URL (GW_PUBLIC_URL), never at the request's Host
 * header; without a public URL no invite is stored or sent.
 */
import { describe, expect, it } from 'vitest';
import { adminModule } from '../../../../../layers/core/src/admin/routes.ts';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { createApp } from '../../../../../layers/core/src/app.ts';
import type { OutboxMailer } from '../../../../../layers/core/src/ports/local/outbox-mailer.ts';
import { createTestDeps } from '../../../../support/deps.ts';
import { ADMIN_KEY } from '../../../../support/gantry.ts';

async function inviteVia(deps: CoreDeps, email: string) {
  await ensureBootstrap(deps, ADMIN_KEY);
  const app = createApp(deps, [adminModule]);
  const res = await app.fetch(
    new Request('http://evil.example/v1/admin/users/invites', {
      method: 'POST',
      headers: { host: 'evil.example', 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ email, role: 'member', workspaces: [] }),
    }),
  );
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, app };
}

describe('invite links', () => {
  it('come from GW_PUBLIC_URL, whatever Host the request names', async () => {
    const deps = await createTestDeps({ GW_PUBLIC_URL: 'https://gantry.example.com/' });
    const { status, json } = await inviteVia(deps, 'a@example.com');
    expect(status, JSON.stringify(json)).toBe(200);
    expect(String(json.invite_link)).toMatch(/^https:\/\/gantry\.example\.com\/v1\/admin\/users\/invites\/accept\?token=gwi_/);
    const mail = await (deps.mailer as OutboxMailer).list();
    expect(mail.map((m) => m.text).join('\n')).not.toContain('evil.example');
  });

  it('are refused with 503 naming GW_PUBLIC_URL when it is not configured; nothing is stored or sent', async () => {
    const deps = await createTestDeps();
    const { status, json, app } = await inviteVia(deps, 'b@example.com');
    expect(status).toBe(503);
    expect(String(json.message)).toContain('GW_PUBLIC_URL');
    expect(await (deps.mailer as OutboxMailer).list()).toEqual([]);
    const list = await app.fetch(new Request('http://x/v1/admin/users/invites', { headers: { 'x-gw-api-key': ADMIN_KEY } }));
    expect(((await list.json()) as { total: number }).total).toBe(0);
  });
});
