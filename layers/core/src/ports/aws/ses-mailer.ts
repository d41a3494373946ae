/** Mailer over SES (v2 API): one SendEmail with simple text content per message. */
import type { SESv2Client } from '@aws-sdk/client-sesv2';
import { checkMailMessage, isMailAddress, type MailMessage, type Mailer } from '../mailer.ts';

export interface SesMailerOptions {
  /** The verified sender address. */
  from: string;
  /** A shared client; when absent one is built from the options below. */
  client?: SESv2Client;
  region?: string;
  /** An SES-compatible endpoint (tests); absent in AWS. */
  endpoint?: string;
}

// Loaded on the first send: most functions never mail, and the SDK costs cold-start time.
let sdk: Promise<typeof import('@aws-sdk/client-sesv2')> | undefined;
const loadSdk = () => (sdk ??= import('@aws-sdk/client-sesv2'));

/** SES tag values allow letters, digits, `_` and `-` only. */
const tagValue = (kind: string) => kind.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 256);

export class SesMailer implements Mailer {
  readonly from: string;
  readonly #opts: SesMailerOptions;
  #client: Promise<SESv2Client> | undefined;

  constructor(opts: SesMailerOptions) {
    if (!isMailAddress(opts.from)) throw new TypeError(`Invalid sender address ${JSON.stringify(opts.from)}`);
    this.from = opts.from;
    this.#opts = opts;
  }

  #getClient(): Promise<SESv2Client> {
    const { client, region, endpoint } = this.#opts;
    this.#client ??= client
      ? Promise.resolve(client)
      : loadSdk().then((m) => new m.SESv2Client({ ...(region ? { region } : {}), ...(endpoint ? { endpoint } : {}) }));
    return this.#client;
  }

  async send(message: MailMessage): Promise<void> {
    checkMailMessage(message);
    const [{ SendEmailCommand }, client] = await Promise.all([loadSdk(), this.#getClient()]);
    await client.send(
      new SendEmailCommand({
        FromEmailAddress: this.from,
        Destination: { ToAddresses: [...message.to] },
        Content: {
          Simple: {
            Subject: { Data: message.subject, Charset: 'UTF-8' },
            Body: { Text: { Data: message.text, Charset: 'UTF-8' } },
          },
        },
        // Lets SES event destinations (bounces, complaints) be filtered by kind.
        EmailTags: [{ Name: 'kind', Value: tagValue(message.kind) }],
      }),
    );
  }
}
