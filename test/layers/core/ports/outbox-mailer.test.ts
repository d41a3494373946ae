/** OutboxMailer on a real temp directory: one JSON file per message, listed oldest first. */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import type { MailMessage } from '../../../../layers/core/src/ports/mailer.ts';
import { OutboxMailer } from '../../../../layers/core/src/ports/local/outbox-mailer.ts';

let parent: string;
let n = 0;
/** A fresh outbox that does not exist yet. */
const outboxDir = () => join(parent, `outbox-${++n}`, 'nested');

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'gantry-outbox-'));
});

afterAll(async () => {
  await rm(parent, { recursive: true, force: true });
});

const START = Date.UTC(2026, 2, 1, 12, 30, 45, 123);
const message = (kind: string, to = ['owner@example.com']): MailMessage => ({
  to,
  subject: `About ${kind}`,
  text: `Body of ${kind}\nsecond line`,
  kind,
});

describe('OutboxMailer', () => {
  it('writes one JSON file per message, named by time and id, creating the directory', async () => {
    const dir = outboxDir();
    const mailer = new OutboxMailer(dir, new ManualClock(START));
    await mailer.send(message('invite.created', ['a@example.com', 'b@example.com']));
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    const [file] = files as [string];
    expect(file).toMatch(/^2026-03-01T12-30-45\.123Z-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\.json$/);
    const stored = JSON.parse(await readFile(join(dir, file), 'utf8')) as Record<string, unknown>;
    expect(stored).toEqual({
      id: file.slice(25, -5),
      sent_at: '2026-03-01T12:30:45.123Z',
      kind: 'invite.created',
      to: ['a@example.com', 'b@example.com'],
      subject: 'About invite.created',
      text: 'Body of invite.created\nsecond line',
    });
  });

  it('lists messages oldest first, also those sent within one millisecond', async () => {
    const clock = new ManualClock(START);
    const mailer = new OutboxMailer(outboxDir(), clock);
    await mailer.send(message('first'));
    await mailer.send(message('second'));
    clock.advance(60_000);
    await mailer.send(message('third'));
    const listed = await mailer.list();
    expect(listed.map((m) => [m.kind, m.sent_at])).toEqual([
      ['first', '2026-03-01T12:30:45.123Z'],
      ['second', '2026-03-01T12:30:45.124Z'],
      ['third', '2026-03-01T12:31:45.123Z'],
    ]);
    expect(new Set(listed.map((m) => m.id)).size).toBe(3);
    expect(listed[0]).toMatchObject(message('first'));
  });

  it('lists another mailer’s messages on the same directory, ignoring other files', async () => {
    const dir = outboxDir();
    await new OutboxMailer(dir, new ManualClock(START + 1000)).send(message('later'));
    await new OutboxMailer(dir, new ManualClock(START)).send(message('earlier'));
    await writeFile(join(dir, 'README.txt'), 'not a message');
    await writeFile(join(dir, '.0c8f.tmp'), '{"half":');
    expect((await new OutboxMailer(dir).list()).map((m) => m.kind)).toEqual(['earlier', 'later']);
  });

  it('lists nothing when the directory does not exist yet', async () => {
    expect(await new OutboxMailer(outboxDir()).list()).toEqual([]);
  });

  it('leaves no temp files behind', async () => {
    const dir = outboxDir();
    const mailer = new OutboxMailer(dir);
    await Promise.all(['a', 'b', 'c', 'd'].map((k) => mailer.send(message(k))));
    const files = await readdir(dir);
    expect(files).toHaveLength(4);
    expect(files.filter((f) => f.startsWith('.'))).toEqual([]);
    expect((await mailer.list()).map((m) => m.kind).sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it.each([
    [{ to: [] }, 'to', 'needs at least one recipient'],
    [{ to: ['nobody'] }, 'to[0]', 'is not an e-mail address'],
    [{ to: ['x@example.com\nBcc: y@example.com'] }, 'to[0]', 'is not an e-mail address'],
    [{ subject: 'Hi\r\nBcc: y@example.com' }, 'subject', 'contains a line break'],
    [{ subject: '' }, 'subject', 'is empty'],
  ])('refuses %j (400 AB01 at %s) and writes nothing', async (change, path, problem) => {
    const dir = outboxDir();
    const mailer = new OutboxMailer(dir);
    const err = await mailer.send({ ...message('bad'), ...change }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ status: 400, code: 'AB01', problems: [{ path, message: problem }] });
    expect(await mailer.list()).toEqual([]);
  });
});
