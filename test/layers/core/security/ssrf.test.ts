import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { GantryError, ValidationError } from '../../../../layers/core/src/http/errors.ts';
import {
  BlockedAddressError,
  TrustedHosts,
  assertConnectedAddress,
  createGuardedLookup,
  isBlockedAddress,
  outboundBaseUrl,
  parseOutboundUrl,
} from '../../../../layers/core/src/security/ssrf.ts';

const FIELD = 'custom_host';
const NONE = new TrustedHosts();

function refusal(raw: string, trusted: TrustedHosts = NONE): ValidationError {
  try {
    parseOutboundUrl(raw, FIELD, trusted);
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
}

describe('parseOutboundUrl refuses', () => {
  const CONTROL = 'control characters or whitespace';
  const SCHEME = 'http or https scheme';
  const CREDENTIALS = 'credentials';
  const NUMERIC = 'dotted-decimal';
  const METADATA = 'metadata endpoint';
  const PRIVATE_IP = 'private or reserved IP address';
  const INTERNAL = 'internal or reserved name';
  const SINGLE = 'single-label';

  const cases: ReadonlyArray<readonly [string, string]> = [
    ['', 'must not be empty'],
    [`https://example.com/${'a'.repeat(2048)}`, 'at most 2048 characters'],
    // control characters and whitespace
    ['https://api.openai.com/v1\n', CONTROL],
    ['https://api.openai.com/v1\r\nHost: evil', CONTROL],
    ['https://api.open ai.com/', CONTROL],
    ['https://api.openai.com\u0000.evil.com/', CONTROL],
    ['https://api.openai.com\t/', CONTROL],
    ['https://api.openai.com\u200b/v1', CONTROL],
    ['https://api.openai.com\u00a0/v1', CONTROL],
    ['https://api.openai.com\u202e/v1', CONTROL],
    // schemes
    ['ftp://example.com/', SCHEME],
    ['file:///etc/passwd', SCHEME],
    ['gopher://example.com:70/_', SCHEME],
    ['javascript:alert(1)', SCHEME],
    ['ws://example.com/', SCHEME],
    ['http:example.com', SCHEME],
    ['//example.com/v1', SCHEME],
    ['example.com', SCHEME],
    // userinfo and parser confusion
    ['https://user:pass@example.com/', CREDENTIALS],
    ['https://user@example.com/', CREDENTIALS],
    ['https://example.com@127.0.0.1/', CREDENTIALS],
    ['https://api.openai.com\\@evil.com/', 'backslashes'],
    ['http:\\\\example.com/', 'backslashes'],
    ['http:///127.0.0.1/', 'must include a host'],
    ['http://', 'must include a host'],
    ['https://example.com:99999/', 'not valid'],
    ['http://exa$mple.com/', 'characters not allowed'],
    // encoded, non-ASCII, trailing dot
    ['http://%31%32%37.0.0.1/', 'percent-encoded'],
    ['http://ex%41mple.com/', 'percent-encoded'],
    ['http://[fe80::1%25eth0]/', 'percent-encoded'],
    ['http://ｅｘａｍｐｌｅ.com/', 'ASCII'],
    ['http://bücher.example.com/', 'ASCII'],
    ['http://１２７.０.０.１/', 'ASCII'],
    ['http://127。0。0。1/', 'ASCII'],
    ['http://example.com./', 'end with a dot'],
    ['http://localhost./', 'end with a dot'],
    // numeric IPv4 spellings (WHATWG would quietly turn these into 127.0.0.1 etc.)
    ['http://2130706433/', NUMERIC],
    ['http://0x7f000001/', NUMERIC],
    ['http://0x7f.1/', NUMERIC],
    ['http://0177.0.0.1/', NUMERIC],
    ['http://127.1/', NUMERIC],
    ['http://127.0.1/', NUMERIC],
    ['http://127.000.000.001/', NUMERIC],
    ['http://8.8.8.0x8/', NUMERIC],
    ['http://1.2.3.4.5/', NUMERIC],
    // metadata endpoints
    ['http://169.254.169.254/latest/meta-data/', METADATA],
    ['http://metadata.google.internal/computeMetadata/v1/', METADATA],
    ['http://METADATA.GOOGLE.INTERNAL/', METADATA],
    ['http://metadata.azure.com/', METADATA],
    ['http://metadata/', METADATA],
    ['http://[fd00:ec2::254]/', METADATA],
    ['http://100.100.100.200/', METADATA],
    ['http://169.254.170.2/v2/credentials', METADATA],
    ['http://[::ffff:169.254.169.254]/', METADATA],
    ['http://[::ffff:a9fe:a9fe]/', METADATA],
    // private and reserved IPv4
    ['http://0.0.0.0/', PRIVATE_IP],
    ['http://10.0.0.1/', PRIVATE_IP],
    ['http://100.64.0.1/', PRIVATE_IP],
    ['http://127.0.0.1:8080/', PRIVATE_IP],
    ['http://169.254.1.1/', PRIVATE_IP],
    ['http://172.16.0.1/', PRIVATE_IP],
    ['http://172.31.255.255/', PRIVATE_IP],
    ['http://192.0.0.8/', PRIVATE_IP],
    ['http://192.0.2.1/', PRIVATE_IP],
    ['http://192.168.1.1/', PRIVATE_IP],
    ['http://198.18.0.1/', PRIVATE_IP],
    ['http://198.19.255.255/', PRIVATE_IP],
    ['http://198.51.100.1/', PRIVATE_IP],
    ['http://203.0.113.1/', PRIVATE_IP],
    ['http://224.0.0.1/', PRIVATE_IP],
    ['http://240.0.0.1/', PRIVATE_IP],
    ['http://255.255.255.255/', PRIVATE_IP],
    // private and reserved IPv6
    ['http://[::]/', PRIVATE_IP],
    ['http://[::1]:8080/', PRIVATE_IP],
    ['http://[0:0:0:0:0:0:0:1]/', PRIVATE_IP],
    ['http://[fc00::1]/', PRIVATE_IP],
    ['http://[fd12:3456::1]/', PRIVATE_IP],
    ['http://[fe80::1]/', PRIVATE_IP],
    ['http://[ff02::1]/', PRIVATE_IP],
    ['http://[2001:db8::1]/', PRIVATE_IP],
    ['http://[64:ff9b::7f00:1]/', PRIVATE_IP],
    ['http://[64:ff9b::10.0.0.1]/', PRIVATE_IP],
    ['http://[::ffff:127.0.0.1]/', PRIVATE_IP],
    ['http://[::ffff:7f00:1]/', PRIVATE_IP],
    ['http://[::ffff:10.0.0.1]/', PRIVATE_IP],
    ['http://[::127.0.0.1]/', PRIVATE_IP],
    ['http://[::8.8.8.8]/', PRIVATE_IP],
    ['http://[2002:7f00:1::]/', PRIVATE_IP],
    // internal names
    ['http://localhost:11434/', INTERNAL],
    ['http://LOCALHOST/', INTERNAL],
    ['http://printer.local/', INTERNAL],
    ['http://api.cluster.local/', INTERNAL],
    ['http://app.localhost/', INTERNAL],
    ['http://db.internal/', INTERNAL],
    ['http://wiki.intranet/', INTERNAL],
    ['http://nas.lan/', INTERNAL],
    ['http://router.home/', INTERNAL],
    ['http://mail.corp/', INTERNAL],
    ['http://vault.private/', INTERNAL],
    ['http://host.localdomain/', INTERNAL],
    ['http://nas.home.arpa/', INTERNAL],
    ['http://abcdefghijklmnop.onion/', INTERNAL],
    ['http://kubernetes.default.svc/', INTERNAL],
    ['http://ollama/', SINGLE],
    ['http://ollama:11434/v1', SINGLE],
  ];

  it('has a broad table', () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
  });

  it.each(cases)('%j (%s)', (raw, reason) => {
    const err = refusal(raw);
    expect(err).toBeInstanceOf(GantryError);
    expect(err.status).toBe(400);
    expect(err.code).toBe('AB01');
    expect(err.param).toBe(FIELD);
    expect(err.message).toContain(FIELD);
    expect(err.message).toContain(reason);
  });
});

describe('parseOutboundUrl allows', () => {
  const trusted = TrustedHosts.parse('localhost,127.0.0.1:8080,[::1]:9000,ollama.internal:11434,gpu-box');
  const cases: ReadonlyArray<readonly [string, string, TrustedHosts]> = [
    ['https://api.openai.com/v1', 'api.openai.com', NONE],
    ['https://API.OpenAI.com/v1/chat/completions?x=1#frag', 'api.openai.com', NONE],
    ['http://8.8.8.8:8080', '8.8.8.8', NONE],
    ['http://1.1.1.1/', '1.1.1.1', NONE],
    ['https://[2606:4700::1111]/', '[2606:4700::1111]', NONE],
    ['https://[64:ff9b::808:808]/', '[64:ff9b::808:808]', NONE],
    ['https://my-resource.openai.azure.com/openai/deployments/x', 'my-resource.openai.azure.com', NONE],
    ['https://xn--bcher-kva.example.com/', 'xn--bcher-kva.example.com', NONE],
    ['https://example.com:8443/path', 'example.com', NONE],
    ['http://localhost:11434/v1', 'localhost', trusted],
    ['http://LocalHost/', 'localhost', trusted],
    ['http://127.0.0.1:8080/v1', '127.0.0.1', trusted],
    ['http://[::1]:9000/', '[::1]', trusted],
    ['http://ollama.internal:11434/api', 'ollama.internal', trusted],
    ['http://gpu-box:8000/v1', 'gpu-box', trusted],
  ];

  it.each(cases)('%j', (raw, hostname, hosts) => {
    const url = parseOutboundUrl(raw, FIELD, hosts);
    expect(url).toBeInstanceOf(URL);
    expect(url.hostname).toBe(hostname);
  });
});

describe('parseOutboundUrl with trusted hosts', () => {
  const trusted = TrustedHosts.parse('localhost,127.0.0.1,ollama.internal:11434,169.254.169.254,metadata.google.internal');

  it.each([
    ['http://user:pass@localhost/', 'credentials'],
    ['ftp://localhost/', 'http or https scheme'],
    ['http://localhost/\n', 'control characters'],
    ['http://localhost./', 'end with a dot'],
    ['http://127.1/', 'dotted-decimal'],
    ['http://%6cocalhost/', 'percent-encoded'],
    ['http://169.254.169.254/', 'metadata endpoint'],
    ['http://metadata.google.internal/', 'metadata endpoint'],
    ['http://ollama.internal:8080/', 'internal or reserved name'],
    ['http://ollama.internal/', 'internal or reserved name'],
    ['http://127.0.0.2/', 'private or reserved IP address'],
  ])('still refuses %j', (raw, reason) => {
    expect(refusal(raw, trusted).message).toContain(reason);
  });

  it('matches the default port of the scheme', () => {
    const hosts = TrustedHosts.parse('gpu-box:443,other-box:80');
    expect(parseOutboundUrl('https://gpu-box/v1', FIELD, hosts).hostname).toBe('gpu-box');
    expect(parseOutboundUrl('http://other-box/v1', FIELD, hosts).hostname).toBe('other-box');
    expect(refusal('http://gpu-box/v1', hosts).message).toContain('single-label');
  });
});

describe("the service's own ports", () => {
  it('are never trusted, by a host-only or a host:port entry; other ports of the host stay trusted', () => {
    const trusted = TrustedHosts.parse('127.0.0.1,localhost:8000');
    trusted.reserveOwnPort(8000);
    trusted.reserveOwnPort(8787);
    for (const url of ['http://127.0.0.1:8787/v1', 'http://127.0.0.1:8000', 'http://localhost:8000']) {
      expect(refusal(url, trusted).message).toContain("this service's own ports");
    }
    expect(parseOutboundUrl('http://127.0.0.1:11434/v1', 'x-gw-custom-host', trusted).port).toBe('11434');
    expect(trusted.has('127.0.0.1', '8787')).toBe(false);
    expect(trusted.has('127.0.0.1', '11434')).toBe(true);
  });

  // The machine as a VM with a public address on its interface would show it (8.8.4.4 stands in).
  const machine = () => ['127.0.0.1', '::1', '192.0.2.2', 'fd00::2', 'fe80::fc:ff:fe00:1', '8.8.4.4'];
  const withOwnPorts = (trust: string) => {
    const hosts = TrustedHosts.parse(trust, machine);
    hosts.reserveOwnPort(8787);
    hosts.reserveOwnEndpoint('http://127.0.0.1:33813');
    return hosts;
  };

  it.each([
    'http://127.0.0.1:33813',
    'http://127.0.0.1:033813/x',
    'http://127.0.0.2:33813',
    'http://127.255.255.254:8787/v1',
    'http://0.0.0.0:33813',
    'http://[::1]:33813',
    'http://[0:0:0:0:0:0:0:1]:8787',
    'http://[::]:8787',
    'http://[::ffff:127.0.0.1]:33813',
    'http://[::ffff:7f00:1]:33813',
    'http://[::127.0.0.1]:33813',
    'http://192.0.2.2:8787',
    'http://[fd00::2]:8787',
    'http://8.8.4.4:33813',
    'http://[::ffff:8.8.4.4]:8787',
    'https://8.8.4.4:8787',
    'http://localhost:33813',
    'http://db.localhost:33813',
  ])('a bare trusted 127.0.0.1 never opens an own port: %s', (url) => {
    expect(refusal(url, withOwnPorts('127.0.0.1')).message).toContain("this service's own ports");
  });

  it('whatever the trust list says: every spelling of this machine, trusted or not', () => {
    const everything = withOwnPorts('127.0.0.1,localhost,0.0.0.0,::1,8.8.4.4,192.0.2.2,gantry-box.example.com');
    for (const url of ['http://127.0.0.1:33813', 'http://[::1]:8787', 'http://8.8.4.4:8787', 'http://gantry-box.example.com:33813']) {
      expect(refusal(url, everything).message).toContain("this service's own ports");
    }
    // A public host of its own on a port number that happens to be ours is someone else's service.
    expect(parseOutboundUrl('https://api.example.com:8787/v1', FIELD, everything).port).toBe('8787');
    // Other ports of a trusted local host stay reachable.
    expect(parseOutboundUrl('http://127.0.0.1:11434/v1', FIELD, everything).port).toBe('11434');
  });

  it("an endpoint without a port reserves its scheme's; one on another machine, its host:port", () => {
    const hosts = TrustedHosts.parse('127.0.0.1,dynamodb,gpu-box', machine);
    hosts.reserveOwnEndpoint('http://127.0.0.1');
    hosts.reserveOwnEndpoint('https://localhost');
    hosts.reserveOwnEndpoint('http://dynamodb:8000');
    expect(refusal('http://127.0.0.1/', hosts).message).toContain("this service's own ports");
    expect(refusal('http://127.0.0.1:443/', hosts).message).toContain("this service's own ports");
    expect(refusal('http://dynamodb:8000/', hosts).message).toContain("this service's own ports");
    expect(parseOutboundUrl('http://gpu-box:8000/v1', FIELD, hosts).port).toBe('8000');
    expect(parseOutboundUrl('http://dynamodb:9000/', FIELD, hosts).port).toBe('9000');
  });

  it('at connect time: a peer on an own port of any address of this machine, whatever the name and trust', () => {
    const hosts = withOwnPorts('127.0.0.1,models.example.com');
    const peer = (remoteAddress: string, remotePort: number) => ({ remoteAddress, remotePort }) as net.Socket;
    for (const [address, port] of [
      ['8.8.4.4', 8787],
      ['::ffff:8.8.4.4', 33813],
      ['127.0.0.1', 33813],
      ['::1', 8787],
      ['::ffff:127.0.0.1', 8787],
      ['fe80::fc:ff:fe00:1%eth0', 8787],
    ] as const) {
      const err = (() => {
        try {
          assertConnectedAddress(peer(address, port), 'models.example.com', hosts);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err, `${address}:${port}`).toBeInstanceOf(BlockedAddressError);
      expect((err as BlockedAddressError).status).toBe(400);
      expect((err as BlockedAddressError).message).toContain('models.example.com reaches this machine on port');
    }
    // The same public address on another port, and another public address on our port, are fine.
    expect(() => assertConnectedAddress(peer('8.8.4.4', 443), 'models.example.com', hosts)).not.toThrow();
    expect(() => assertConnectedAddress(peer('8.8.8.8', 8787), 'models.example.com', hosts)).not.toThrow();
  });

  it('a refusal of a private host says how to allow it, with its port', () => {
    expect(refusal('http://192.168.1.20:11434/v1').message).toContain('add "192.168.1.20:11434" to GW_TRUSTED_CUSTOM_HOSTS');
    expect(refusal('http://ollama.internal/v1').message).toContain('add "ollama.internal:80" to GW_TRUSTED_CUSTOM_HOSTS');
  });
});

describe('isBlockedAddress', () => {
  it.each([
    // IPv4
    '0.0.0.0',
    '0.255.255.255',
    '10.0.0.0',
    '10.255.255.255',
    '100.64.0.0',
    '100.127.255.255',
    '127.0.0.1',
    '127.255.255.254',
    '169.254.0.1',
    '169.254.169.254',
    '172.16.0.0',
    '172.31.255.255',
    '192.0.0.1',
    '192.0.0.192',
    '192.0.2.200',
    '192.88.99.1',
    '192.168.0.1',
    '192.168.255.255',
    '198.18.0.0',
    '198.19.255.255',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '168.63.129.16',
    // IPv6
    '::',
    '::1',
    '0:0:0:0:0:0:0:1',
    '[::1]',
    'fc00::1',
    'fdff:ffff::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf:ffff::1',
    'fec0::1',
    'ff00::1',
    'ff02::fb',
    '2001:db8::',
    '2001:db8:ffff::1',
    '3fff::1',
    '2001::1',
    '2001:2::1',
    '100::1',
    '64:ff9b::7f00:1',
    '64:ff9b::10.1.2.3',
    '64:ff9b:1::1',
    '::ffff:127.0.0.1',
    '::FFFF:7F00:1',
    '::ffff:10.0.0.1',
    '::ffff:192.168.1.1',
    '::ffff:a9fe:a9fe',
    '::ffff:0:127.0.0.1',
    '::127.0.0.1',
    '::7f00:1',
    '::8.8.8.8',
    '2002:7f00:1::',
    '2002:c0a8:101::1',
    'fd00:ec2::254',
    // not an address at all: fail closed
    '',
    'localhost',
    'example.com',
    '1.2.3',
    '1.2.3.4.5',
    '010.0.0.1',
    '2130706433',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    '::ffff:1.2.3',
    'gggg::1',
  ])('blocks %j', (ip) => {
    expect(isBlockedAddress(ip)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.1',
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700::1111',
    '2a00:1450:4001::200e',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
    '[2606:4700::1111]',
  ])('allows %j', (ip) => {
    expect(isBlockedAddress(ip)).toBe(false);
  });
});

describe('TrustedHosts', () => {
  it('treats a missing or blank list as empty', () => {
    expect(TrustedHosts.parse(undefined).size).toBe(0);
    expect(TrustedHosts.parse('').size).toBe(0);
    expect(TrustedHosts.parse(' , ,, ').size).toBe(0);
    expect(TrustedHosts.parse(undefined).has('localhost')).toBe(false);
  });

  it('parses hosts, ports, case, brackets and blanks', () => {
    const hosts = TrustedHosts.parse(' LocalHost , 127.0.0.1,,ollama.internal:11434, [::1]:8080,[FD00::1],::2 ');
    expect(hosts.size).toBe(6);
    expect(hosts.has('localhost')).toBe(true);
    expect(hosts.has('LOCALHOST', '9999')).toBe(true);
    expect(hosts.has('127.0.0.1', '1')).toBe(true);
    expect(hosts.has('ollama.internal', '11434')).toBe(true);
    expect(hosts.has('OLLAMA.internal', '11434')).toBe(true);
    expect(hosts.has('ollama.internal', '8080')).toBe(false);
    expect(hosts.has('ollama.internal', '')).toBe(false);
    // Without a port (DNS time) any entry for the host counts.
    expect(hosts.has('ollama.internal')).toBe(true);
    expect(hosts.has('[::1]', '8080')).toBe(true);
    expect(hosts.has('::1', '8080')).toBe(true);
    expect(hosts.has('0:0:0:0:0:0:0:1', '8080')).toBe(true);
    expect(hosts.has('::1', '80')).toBe(false);
    expect(hosts.has('fd00::1', '443')).toBe(true);
    expect(hosts.has('[fd00:0::1]')).toBe(true);
    expect(hosts.has('::2')).toBe(true);
    expect(hosts.has('example.com')).toBe(false);
    expect(hosts.has('127.0.0.2')).toBe(false);
  });

  it('merges ports, and a port-less entry trusts every port', () => {
    const hosts = TrustedHosts.parse('a.example:1,a.example:2,b.example:1,b.example');
    expect(hosts.has('a.example', '1')).toBe(true);
    expect(hosts.has('a.example', '2')).toBe(true);
    expect(hosts.has('a.example', '3')).toBe(false);
    expect(hosts.has('b.example', '3')).toBe(true);
    expect(new TrustedHosts(['x.example:7']).has('x.example', '07')).toBe(true);
  });

  it.each(['host:abc', 'host:0', 'host:70000', 'host:', '[::1', '[::1]x', '[::1]:', ':80', '[zz::1]', '[]:80'])('rejects malformed entry %j', (entry) => {
    expect(() => TrustedHosts.parse(`localhost,${entry}`)).toThrow(/Trusted host/);
  });
});

// Real sockets on loopback only; nothing here touches the network or public DNS.
describe('connect-time guards', () => {
  let server: http.Server;
  let port = 0;
  let served = 0;

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      served++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** The wiring the upstream client uses: guarded lookup plus a check before any byte is written. */
  function guardedGet(host: string, trusted: TrustedHosts, autoSelectFamily: boolean, seen: Array<boolean | undefined>): Promise<string> {
    const lookup = createGuardedLookup(trusted);
    // autoSelectFamily reaches net.connect at run time but is missing from the http typings.
    const options: http.RequestOptions & { autoSelectFamily: boolean } = {
      host,
      port,
      path: '/',
      agent: false,
      autoSelectFamily,
      lookup: (hostname, lookupOptions, callback) => {
        seen.push(lookupOptions.all);
        lookup(hostname, lookupOptions, callback);
      },
    };
    // Node only resolves every family (lookup with all: true) when no family is pinned.
    if (!autoSelectFamily) options.family = 4;
    return new Promise((resolve, reject) => {
      const req = http.get(options, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(body));
      });
      req.on('socket', (socket) => {
        socket.prependOnceListener('connect', () => {
          try {
            assertConnectedAddress(socket, host, trusted);
          } catch (err) {
            req.destroy(err as Error);
          }
        });
      });
      req.on('error', reject);
    });
  }

  for (const autoSelectFamily of [false, true]) {
    const mode = autoSelectFamily ? 'all: true' : 'single address';

    it(`refuses an untrusted name resolving to loopback (${mode})`, async () => {
      const before = served;
      const seen: Array<boolean | undefined> = [];
      const err: unknown = await guardedGet('localhost', NONE, autoSelectFamily, seen).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BlockedAddressError);
      const blocked = err as BlockedAddressError;
      expect(blocked.status).toBe(400);
      expect(blocked.code).toBe('AB01');
      expect(blocked.type).toBe('invalid_request_error');
      expect(blocked.openaiCode).toBe('blocked_address');
      expect(blocked.address).toBe('127.0.0.1');
      expect(blocked.message).toContain('localhost');
      expect(blocked.message).not.toContain('127.0.0.1');
      expect(seen).toEqual([autoSelectFamily ? true : undefined]);
      expect(served).toBe(before);
    });

    it(`connects to a trusted name (${mode})`, async () => {
      const seen: Array<boolean | undefined> = [];
      const body = await guardedGet('localhost', TrustedHosts.parse('localhost'), autoSelectFamily, seen);
      expect(body).toBe('ok');
      expect(seen).toEqual([autoSelectFamily ? true : undefined]);
    });
  }

  it('refuses an untrusted IP literal, which skips lookup, at connect time', async () => {
    const before = served;
    const seen: Array<boolean | undefined> = [];
    const err: unknown = await guardedGet('127.0.0.1', NONE, false, seen).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlockedAddressError);
    expect(seen).toEqual([]);
    expect(served).toBe(before);
  });

  it('connects to a trusted IP literal', async () => {
    const body = await guardedGet('127.0.0.1', TrustedHosts.parse('127.0.0.1'), false, []);
    expect(body).toBe('ok');
  });

  it('trusts names, not the addresses they resolve to', async () => {
    const err: unknown = await guardedGet('localhost', TrustedHosts.parse('127.0.0.1'), true, []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlockedAddressError);
  });

  describe('lookup called directly', () => {
    function call(
      trusted: TrustedHosts,
      host: string,
      all: boolean,
    ): Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family: number | undefined }> {
      return new Promise((resolve) => {
        createGuardedLookup(trusted)(host, all ? { all: true, family: 4 } : { family: 4 }, (err, address, family) => resolve({ err, address, family }));
      });
    }

    it('answers with an array of {address, family} when all is true', async () => {
      const { err, address } = await call(TrustedHosts.parse('127.0.0.1'), '127.0.0.1', true);
      expect(err).toBeNull();
      expect(address).toEqual([{ address: '127.0.0.1', family: 4 }]);
    });

    it('answers with one address and its family otherwise', async () => {
      const { err, address, family } = await call(TrustedHosts.parse('localhost'), 'localhost', false);
      expect(err).toBeNull();
      expect(address).toBe('127.0.0.1');
      expect(family).toBe(4);
    });

    it.each([true, false])('refuses blocked literals (all: %s)', async (all) => {
      const { err } = await call(NONE, '10.1.2.3', all);
      expect(err).toBeInstanceOf(BlockedAddressError);
    });

    it('refuses metadata addresses even for a trusted host', async () => {
      const { err } = await call(TrustedHosts.parse('169.254.169.254'), '169.254.169.254', true);
      expect(err).toBeInstanceOf(BlockedAddressError);
    });

    it('lets public literals through untrusted', async () => {
      const { err, address } = await call(NONE, '8.8.8.8', false);
      expect(err).toBeNull();
      expect(address).toBe('8.8.8.8');
    });
  });

  describe('assertConnectedAddress', () => {
    async function connected(): Promise<net.Socket> {
      const socket = net.connect(port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      return socket;
    }

    it('refuses a loopback peer for an untrusted host', async () => {
      const socket = await connected();
      try {
        expect(() => assertConnectedAddress(socket, 'api.example.com', NONE)).toThrow(BlockedAddressError);
        expect(() => assertConnectedAddress(socket, 'localhost', NONE)).toThrow(BlockedAddressError);
      } finally {
        socket.destroy();
      }
    });

    it('allows a trusted host, honouring the port of the entry', async () => {
      const socket = await connected();
      try {
        expect(() => assertConnectedAddress(socket, 'localhost', TrustedHosts.parse('localhost'))).not.toThrow();
        expect(() => assertConnectedAddress(socket, 'localhost', TrustedHosts.parse(`localhost:${port}`))).not.toThrow();
        expect(() => assertConnectedAddress(socket, 'localhost', TrustedHosts.parse(`localhost:${port === 1 ? 2 : 1}`))).toThrow(BlockedAddressError);
      } finally {
        socket.destroy();
      }
    });

    it('refuses a socket that is not connected', () => {
      const socket = new net.Socket();
      expect(() => assertConnectedAddress(socket, 'localhost', TrustedHosts.parse('localhost'))).toThrow(BlockedAddressError);
      socket.destroy();
    });
  });
});

describe('outboundBaseUrl', () => {
  it('answers the checked base without trailing slashes, the same on a second call', () => {
    const trusted = TrustedHosts.parse('');
    expect(outboundBaseUrl('https://api.example.com/v1/', 'config.custom_host', trusted)).toBe('https://api.example.com/v1');
    expect(outboundBaseUrl('https://api.example.com/v1/', 'config.custom_host', trusted)).toBe('https://api.example.com/v1');
  });

  it('refuses every time, naming the field of each call, and remembers nothing refused', () => {
    const trusted = TrustedHosts.parse('');
    expect(() => outboundBaseUrl('http://127.0.0.1:9/v1', 'a.custom_host', trusted)).toThrow(/a\.custom_host/);
    expect(() => outboundBaseUrl('http://127.0.0.1:9/v1', 'targets[1].custom_host', trusted)).toThrow(/targets\[1\]\.custom_host/);
  });

  it('remembers per trust list: a host trusted by one list is still refused under another', () => {
    const open = TrustedHosts.parse('127.0.0.1');
    const strict = TrustedHosts.parse('');
    expect(outboundBaseUrl('http://127.0.0.1:9/v1', 'custom_host', open)).toBe('http://127.0.0.1:9/v1');
    expect(() => outboundBaseUrl('http://127.0.0.1:9/v1', 'custom_host', strict)).toThrow(/custom_host/);
  });

  it('stays bounded: past its bound it starts again and still answers correctly', () => {
    const trusted = TrustedHosts.parse('');
    for (let i = 0; i < 600; i++) expect(outboundBaseUrl(`https://h${i}.example.com/`, 'custom_host', trusted)).toBe(`https://h${i}.example.com`);
    expect(outboundBaseUrl('https://h0.example.com/', 'custom_host', trusted)).toBe('https://h0.example.com');
  });
});
