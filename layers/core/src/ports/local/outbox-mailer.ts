/**
 * Mailer for the local runtime: sends nothing, writes each message to a directory (the outbox) as
 * `<time>-<uuid>.json`, where a developer or a test can read it.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { systemClock, type Clock } from '../clock.ts';
import { checkMailMessage, type MailMessage, type Mailer } from '../mailer.ts';

export type OutboxMessage = MailMessage & { id: string; sent_at: string };

/** Written files only: temp files start with a dot. */
const MESSAGE_FILE = /^\d{4}-\d{2}-\d{2}T[\d-]+\.\d{3}Z-[0-9a-f-]{36}\.json$/;

export class OutboxMailer implements Mailer {
  readonly dir: string;
  readonly #clock: Clock;
  #lastMs = 0;

  constructor(dir: string, clock: Clock = systemClock) {
    this.dir = resolve(dir);
    this.#clock = clock;
  }

  async send(message: MailMessage): Promise<void> {
    checkMailMessage(message);
    // Strictly increasing times keep this mailer's files in send order, also within a millisecond.
    this.#lastMs = Math.max(this.#clock.now(), this.#lastMs + 1);
    const sentAt = new Date(this.#lastMs).toISOString();
    const id = randomUUID();
    const record: OutboxMessage = {
      id,
      sent_at: sentAt,
      kind: message.kind,
      to: [...message.to],
      subject: message.subject,
      text: message.text,
    };
    // No colons in file names, which some file systems refuse; the order stays that of the time.
    const file = join(this.dir, `${sentAt.replaceAll(':', '-')}-${id}.json`);
    const tmp = join(this.dir, `.${id}.tmp`);
    await mkdir(this.dir, { recursive: true });
    try {
      await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`);
      // Readers never see half a message.
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /** Every message in the outbox, oldest first; none when the directory does not exist yet. */
  async list(): Promise<OutboxMessage[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const files = names.filter((n) => MESSAGE_FILE.test(n)).sort();
    return Promise.all(files.map(async (n) => JSON.parse(await readFile(join(this.dir, n), 'utf8')) as OutboxMessage));
  }
}
