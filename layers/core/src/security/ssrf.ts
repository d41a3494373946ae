/**
 * SSRF guard for caller-supplied upstream URLs (custom hosts). Three layers, because each alone is
 * bypassable: `parseOutboundUrl` refuses the URL text, `createGuardedLookup` refuses what the name
 * resolves to, and `assertConnectedAddress` refuses the address the socket actually reached (DNS
 * rebinding between lookup and connect, IP literals that never go through lookup).
 */
import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';

import { GantryError, ValidationError, type GantryErrorOptions } from '../http/errors.ts';

/** 400 AB01: a host resolved or connected to a private, reserved or metadata address, or to this service itself. */
export class BlockedAddressError extends GantryError {
  readonly hostname: string;
  /** Kept for logs only: echoing it to the caller would map internal DNS for them. */
  readonly address: string;

  constructor(hostname: string, address: string, opts: GantryErrorOptions & { port?: string | undefined; ownPort?: boolean } = {}) {
    const { port, ownPort, ...rest } = opts;
    const message = ownPort
      ? `Host ${hostname} reaches this machine on port ${port ?? '?'}, one of this service's own ports (its listener or its database): no custom host may reach it, trusted or not`
      : `Host ${hostname} resolves to a private or reserved address${allowHint(hostname, port)}`;
    super(400, 'AB01', 'invalid_request_error', message, { openaiCode: 'blocked_address', ...rest });
    this.hostname = hostname;
    this.address = address;
  }
}

/** How an operator allows a local or private host: one `host:port` entry (a bare host trusts every port but this service's own). */
function allowHint(hostname: string, port: string | undefined): string {
  const host = hostname.includes(':') && !hostname.startsWith('[') ? `[${hostname}]` : hostname;
  return `; to allow it, add "${host}:${port ?? '<port>'}" to GW_TRUSTED_CUSTOM_HOSTS`;
}

// ---------------------------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------------------------

/** Strict dotted-quad without leading zeros: the only IPv4 spelling we accept anywhere. */
const CANONICAL_IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function parseIPv4(text: string): number | null {
  if (!CANONICAL_IPV4.test(text)) return null;
  return text.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function v4(text: string): number {
  const value = parseIPv4(text);
  if (value === null) throw new Error(`bad IPv4 constant ${text}`);
  return value;
}

/** [network, prefix length]. */
type V4Range = readonly [number, number];

const BLOCKED_V4: readonly V4Range[] = [
  [v4('0.0.0.0'), 8], // "this" network
  [v4('10.0.0.0'), 8], // private
  [v4('100.64.0.0'), 10], // carrier-grade NAT (also Alibaba metadata 100.100.100.200)
  [v4('127.0.0.0'), 8], // loopback
  [v4('169.254.0.0'), 16], // link-local (AWS/GCP/Azure metadata 169.254.169.254)
  [v4('172.16.0.0'), 12], // private
  [v4('192.0.0.0'), 24], // IETF protocol assignments (Oracle metadata 192.0.0.192)
  [v4('192.0.2.0'), 24], // TEST-NET-1
  [v4('192.88.99.0'), 24], // deprecated 6to4 relay anycast
  [v4('192.168.0.0'), 16], // private
  [v4('198.18.0.0'), 15], // benchmarking
  [v4('198.51.100.0'), 24], // TEST-NET-2
  [v4('203.0.113.0'), 24], // TEST-NET-3
  [v4('224.0.0.0'), 4], // multicast
  [v4('240.0.0.0'), 4], // reserved, includes broadcast 255.255.255.255
  [v4('168.63.129.16'), 32], // Azure WireServer: public-looking but platform-internal
];

/** Metadata endpoints stay blocked even for trusted hosts: no model provider lives there. */
const METADATA_V4: readonly number[] = [
  v4('169.254.169.254'),
  v4('169.254.170.2'), // ECS task metadata
  v4('169.254.0.23'), // Tencent Cloud
  v4('100.100.100.200'), // Alibaba Cloud
  v4('192.0.0.192'), // Oracle Cloud
  v4('168.63.129.16'), // Azure WireServer
];

function inV4Range(addr: number, [network, prefix]: V4Range): boolean {
  const size = 2 ** (32 - prefix);
  return Math.floor(addr / size) === Math.floor(network / size);
}

function isBlockedV4(addr: number): boolean {
  return BLOCKED_V4.some((range) => inV4Range(addr, range));
}

/** Parses an IPv6 address (optionally with a %zone) into a 128-bit integer. */
function parseIPv6(text: string): bigint | null {
  let s = text.toLowerCase();
  const zone = s.indexOf('%');
  if (zone !== -1) s = s.slice(0, zone);
  // An embedded dotted IPv4 tail stands for the last two groups.
  const lastColon = s.lastIndexOf(':');
  if (lastColon === -1) return null;
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const embedded = parseIPv4(tail);
    if (embedded === null) return null;
    s = `${s.slice(0, lastColon + 1)}${(embedded >>> 16).toString(16)}:${(embedded & 0xffff).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const toGroups = (part: string): string[] | null => (part === '' ? [] : part.split(':'));
  const head = toGroups(halves[0] ?? '');
  const rest = halves.length === 2 ? toGroups(halves[1] ?? '') : [];
  if (head === null || rest === null) return null;
  const present = head.length + rest.length;
  if (halves.length === 2 ? present > 7 : present !== 8) return null;
  const groups = [...head, ...Array<string>(8 - present).fill('0'), ...rest];
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(group)) return null;
    value = (value << 16n) | BigInt(parseInt(group, 16));
  }
  return value;
}

function v6(text: string): bigint {
  const value = parseIPv6(text);
  if (value === null) throw new Error(`bad IPv6 constant ${text}`);
  return value;
}

type V6Range = readonly [bigint, number];

function inV6Range(addr: bigint, [network, prefix]: V6Range): boolean {
  const shift = BigInt(128 - prefix);
  return addr >> shift === network >> shift;
}

/** Forms whose low 32 bits are an IPv4 address the packet really goes to: judge that address. */
const EMBEDDING_V6: readonly V6Range[] = [
  [v6('::ffff:0:0'), 96], // IPv4-mapped
  [v6('::ffff:0:0:0'), 96], // IPv4-translated (SIIT)
  [v6('64:ff9b::'), 96], // NAT64 well-known prefix
];

/** Only global unicast (2000::/3) is allowed; these are its non-public parts. */
const GLOBAL_UNICAST: V6Range = [v6('2000::'), 3];
const BLOCKED_GLOBAL_V6: readonly V6Range[] = [
  [v6('2001::'), 32], // Teredo: the client IPv4 hides in the address
  [v6('2001:2::'), 48], // benchmarking
  [v6('2001:10::'), 28], // ORCHID
  [v6('2001:20::'), 28], // ORCHIDv2
  [v6('2001:db8::'), 32], // documentation
  [v6('3fff::'), 20], // documentation (RFC 9637)
];
const SIX_TO_FOUR: V6Range = [v6('2002::'), 16];

const METADATA_V6: readonly bigint[] = [v6('fd00:ec2::254'), v6('fd00:ec2::23')];

function embeddedV4(addr: bigint): number | null {
  if (EMBEDDING_V6.some((range) => inV6Range(addr, range))) return Number(addr & 0xffffffffn);
  if (inV6Range(addr, SIX_TO_FOUR)) return Number((addr >> 80n) & 0xffffffffn);
  return null;
}

function isBlockedV6(addr: bigint): boolean {
  const inner = embeddedV4(addr);
  if (inner !== null) return isBlockedV4(inner);
  // Outside 2000::/3 is loopback, unspecified, IPv4-compatible, ULA, link/site-local, multicast,
  // discard or unassigned: nothing a provider would use.
  if (!inV6Range(addr, GLOBAL_UNICAST)) return true;
  return BLOCKED_GLOBAL_V6.some((range) => inV6Range(addr, range));
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * True when a textual address (as DNS or a socket reports it) must not be contacted. Anything that
 * is not a well-formed IPv4 or IPv6 address counts as blocked: fail closed.
 */
export function isBlockedAddress(ip: string): boolean {
  const text = stripBrackets(ip.trim());
  const a4 = parseIPv4(text);
  if (a4 !== null) return isBlockedV4(a4);
  const a6 = parseIPv6(text);
  if (a6 !== null) return isBlockedV6(a6);
  return true;
}

function isMetadataAddress(ip: string): boolean {
  const text = stripBrackets(ip.trim());
  const a4 = parseIPv4(text);
  if (a4 !== null) return METADATA_V4.includes(a4);
  const a6 = parseIPv6(text);
  if (a6 === null) return false;
  const inner = embeddedV4(a6);
  return inner !== null ? METADATA_V4.includes(inner) : METADATA_V6.includes(a6);
}

// ---------------------------------------------------------------------------------------------
// This machine
// ---------------------------------------------------------------------------------------------

/** One spelling per address: `4:<n>` for IPv4 (also carried in IPv6: mapped, compatible ...), else `6:<n>`. */
function addressKey(ip: string): string | null {
  const text = stripBrackets(ip.trim());
  const a4 = parseIPv4(text);
  if (a4 !== null) return `4:${a4}`;
  const a6 = parseIPv6(text);
  if (a6 === null) return null;
  // ::a.b.c.d (IPv4-compatible, deprecated) besides the forms embeddedV4 knows; :: and ::1 are IPv6's own.
  const inner = embeddedV4(a6) ?? (a6 > 1n && a6 <= 0xffffffffn ? Number(a6) : null);
  return inner !== null ? `4:${inner}` : `6:${a6}`;
}

const LOOPBACK_V4: V4Range = [v4('127.0.0.0'), 8];
/** Linux delivers a connection to 0.0.0.0 (and the rest of 0/8 it accepts) to this machine. */
const THIS_HOST_V4: V4Range = [v4('0.0.0.0'), 8];

/** This machine's interface addresses; read on each check (rare: only for this service's own ports), so a new interface counts. */
export type MachineAddresses = () => Iterable<string>;

export const interfaceAddresses: MachineAddresses = () => Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));

/** Whether a connection to `ip` stays on this machine: loopback, unspecified, or one of its interfaces' addresses. */
function isThisMachine(ip: string, machine: MachineAddresses): boolean {
  const key = addressKey(ip);
  if (key === null) return false;
  if (key.startsWith('4:')) {
    const n = Number(key.slice(2));
    if (inV4Range(n, LOOPBACK_V4) || inV4Range(n, THIS_HOST_V4)) return true;
  } else if (key === '6:0' || key === '6:1') {
    return true;
  }
  for (const address of machine()) if (addressKey(address) === key) return true;
  return false;
}

/** Names that always mean this machine (RFC 6761). */
const isLocalhostName = (host: string): boolean => host === 'localhost' || host.endsWith('.localhost');

// ---------------------------------------------------------------------------------------------
// Trusted hosts
// ---------------------------------------------------------------------------------------------

/** Lower-cases and, for IPv6, canonicalises so `[0::1]` and `::1` compare equal. */
function normaliseHost(host: string): string {
  const bare = stripBrackets(host.trim()).toLowerCase();
  if (!bare.includes(':')) return bare;
  const a6 = parseIPv6(bare);
  if (a6 === null) return bare;
  try {
    return stripBrackets(new URL(`http://[${bare}]/`).hostname);
  } catch {
    return bare;
  }
}

/**
 * Operator allow-list (GW_TRUSTED_CUSTOM_HOSTS), e.g. `localhost:11434,ollama.internal:11434`, and
 * the ports this service listens on, which no custom host reaches, trusted or not.
 */
export class TrustedHosts {
  /** host -> allowed ports; `null` means every port (but this service's own). */
  readonly #entries: Map<string, Set<number> | null>;
  /** Ports this service listens on on this machine (its listener, DynamoDB Local), on any of its addresses. */
  readonly #ownPorts = new Set<number>();
  /** `host:port` of this service's own endpoints on another machine (a DynamoDB endpoint elsewhere). */
  readonly #ownRemote = new Set<string>();
  readonly #machine: MachineAddresses;

  constructor(hosts: readonly string[] = [], machine: MachineAddresses = interfaceAddresses) {
    this.#machine = machine;
    this.#entries = new Map();
    for (const raw of hosts) {
      const entry = raw.trim();
      if (entry === '') continue;
      const { host, port } = splitEntry(entry);
      const existing = this.#entries.get(host);
      if (port === null || existing === null) {
        this.#entries.set(host, null);
      } else {
        this.#entries.set(host, new Set([...(existing ?? []), port]));
      }
    }
  }

  /** Blank entries are ignored; a malformed entry throws, so a bad config fails at start-up. */
  static parse(raw: string | undefined, machine?: MachineAddresses): TrustedHosts {
    return new TrustedHosts((raw ?? '').split(','), machine);
  }

  /**
   * Marks a port this service listens on (its server, its DynamoDB Local, any other listener it
   * starts): no outbound call reaches it on any address of this machine, so a custom host cannot
   * read or change the service's own data.
   */
  reserveOwnPort(port: number): void {
    if (Number.isInteger(port) && port > 0) this.#ownPorts.add(port);
  }

  /**
   * Marks a service this one depends on by its URL (DYNAMODB_ENDPOINT): its port (the scheme's
   * default when the URL names none) on every address of this machine when it runs here, else
   * its `host:port`.
   */
  reserveOwnEndpoint(url: string | undefined): void {
    if (!url) return;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return;
    }
    const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
    const host = normaliseHost(parsed.hostname);
    if (isLocalhostName(host) || this.isThisMachine(host)) this.reserveOwnPort(port);
    else this.#ownRemote.add(`${host}:${port}`);
  }

  isOwnPort(port: string | number): boolean {
    return this.#ownPorts.has(Number(port));
  }

  /** Whether a connection to `address` stays on this machine (loopback, unspecified, an interface's address). */
  isThisMachine(address: string): boolean {
    return isThisMachine(address, this.#machine);
  }

  /** Whether a connection to `address`:`port` reaches this service itself. */
  isOwnDestination(address: string, port: string | number): boolean {
    return this.isOwnPort(port) && this.isThisMachine(address);
  }

  /**
   * Whether a URL's host and (effective) port name this service, judged from the text: this
   * machine by address or name, or a trusted host (it may be this machine under another name), on
   * an own port; or an own endpoint elsewhere. The connected address is judged again.
   */
  namesOwnService(hostname: string, port: string): boolean {
    const host = normaliseHost(hostname);
    if (this.#ownRemote.has(`${host}:${Number(port)}`)) return true;
    if (!this.isOwnPort(port)) return false;
    return this.#entries.has(host) || isLocalhostName(host) || this.isThisMachine(host);
  }

  /** Whether any entry names the host (on some port). */
  hasHost(hostname: string): boolean {
    return this.#entries.has(normaliseHost(hostname));
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Whether `hostname` is trusted on `port`. Pass the effective port (443 for a bare https URL, not
   * URL.port's ''). Without a port (DNS lookup does not know it) any entry for the host counts: the
   * port was already enforced when the URL was parsed.
   */
  has(hostname: string, port?: string): boolean {
    const ports = this.#entries.get(normaliseHost(hostname));
    if (ports === undefined) return false;
    if (port !== undefined && this.namesOwnService(hostname, port)) return false;
    if (ports === null || port === undefined) return true;
    return ports.has(Number(port));
  }
}

function splitEntry(entry: string): { host: string; port: number | null } {
  let host: string;
  let portText: string | undefined;
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    if (close === -1) throw new Error(`Trusted host "${entry}": missing "]"`);
    host = entry.slice(1, close);
    const after = entry.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) throw new Error(`Trusted host "${entry}": unexpected text after "]"`);
    portText = after === '' ? undefined : after.slice(1);
  } else if (entry.indexOf(':') !== entry.lastIndexOf(':')) {
    host = entry; // a bare IPv6 address: no room for a port without brackets
  } else {
    const colon = entry.indexOf(':');
    host = colon === -1 ? entry : entry.slice(0, colon);
    portText = colon === -1 ? undefined : entry.slice(colon + 1);
  }
  if (host === '') throw new Error(`Trusted host "${entry}": empty host`);
  if (host.includes(':') && parseIPv6(host) === null) throw new Error(`Trusted host "${entry}": invalid IPv6 address`);
  if (portText === undefined) return { host: normaliseHost(host), port: null };
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port < 1 || port > 65535) {
    throw new Error(`Trusted host "${entry}": invalid port "${portText}"`);
  }
  return { host: normaliseHost(host), port };
}

// ---------------------------------------------------------------------------------------------
// URL validation
// ---------------------------------------------------------------------------------------------

const MAX_URL_LENGTH = 2048;

const METADATA_HOSTS = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'metadata.azure.com',
  'metadata.azure.internal',
  'metadata.tencentyun.com',
  'metadata.platformequinix.com',
  'metadata.packet.net',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** Suffixes that never name a public service (RFC 6761/6762/8375/9476, ICANN name collisions). */
const INTERNAL_SUFFIXES = [
  'localhost',
  'local',
  'localdomain',
  'internal',
  'intranet',
  'lan',
  'home',
  'corp',
  'private',
  'arpa',
  'onion',
  'test',
  'invalid',
  'example',
  'alt',
  'svc',
];

/** Control, format (zero-width, bidi) and separator characters, plus any whitespace. */
const UNSAFE_CHARS = /[\p{Cc}\p{Cf}\p{Z}\s]/u;

/** WHATWG treats a host whose last label is numeric as IPv4 and accepts exotic spellings of it. */
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/i;

function refuse(field: string, reason: string): ValidationError {
  return ValidationError.field(field, reason);
}

/** Splits the raw authority's host out before WHATWG normalisation can hide how it was written. */
function rawHostOf(authority: string): { host: string; bracketed: boolean } {
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    return { host: close === -1 ? authority.slice(1) : authority.slice(1, close), bracketed: true };
  }
  const colon = authority.indexOf(':');
  return { host: colon === -1 ? authority : authority.slice(0, colon), bracketed: false };
}

function internalNameReason(host: string): string | null {
  const labels = host.split('.');
  for (let i = 0; i < labels.length; i++) {
    if (INTERNAL_SUFFIXES.includes(labels.slice(i).join('.'))) return 'host is an internal or reserved name';
  }
  // Single labels resolve through search domains to whatever the local network calls them.
  if (labels.length === 1) return 'host must be a fully qualified domain name, not a single-label name';
  return null;
}

/** Checked base URLs by trust list: the same custom host arrives with every request of a config. */
const checkedBases = new WeakMap<TrustedHosts, Map<string, string>>();
/** Distinct hosts remembered per trust list; past it the memory starts again (a bound, not an LRU). */
const CHECKED_BASES_MAX = 512;

/**
 * `parseOutboundUrl(raw).href` without trailing slashes: a provider's base URL as the gateway calls
 * it. Only URLs that passed are remembered (the check is a pure function of the text and the trust
 * list), so a refusal always names the caller's field; the address a name resolves to is still
 * checked at every connect.
 */
export function outboundBaseUrl(raw: string, field: string, trusted: TrustedHosts): string {
  let known = checkedBases.get(trusted);
  const hit = known?.get(raw);
  if (hit !== undefined) return hit;
  const base = parseOutboundUrl(raw, field, trusted).href.replace(/\/+$/, '');
  if (!known || known.size >= CHECKED_BASES_MAX) checkedBases.set(trusted, (known = new Map()));
  known.set(raw, base);
  return base;
}

/**
 * Validates a caller-supplied upstream URL and returns it parsed. Trusted hosts skip the private
 * address and internal name checks, never the syntax or metadata checks. A public name may still
 * resolve to a private address: connect with `createGuardedLookup` and `assertConnectedAddress`.
 */
export function parseOutboundUrl(raw: string, field: string, trusted: TrustedHosts): URL {
  if (raw.length === 0) throw refuse(field, 'URL must not be empty');
  if (raw.length > MAX_URL_LENGTH) throw refuse(field, `URL must be at most ${MAX_URL_LENGTH} characters`);
  if (UNSAFE_CHARS.test(raw)) throw refuse(field, 'URL must not contain control characters or whitespace');
  // Parsers disagree on backslashes (WHATWG reads them as "/"), a classic confusion vector.
  if (raw.includes('\\')) throw refuse(field, 'URL must not contain backslashes');

  const prefix = /^(https?):\/\//i.exec(raw);
  if (prefix === null) throw refuse(field, 'URL must use the http or https scheme (e.g. https://host/path)');
  const authority = raw.slice(prefix[0].length).split(/[/?#]/, 1)[0] ?? '';
  if (authority.includes('@')) throw refuse(field, 'URL must not contain credentials (user:pass@)');

  const { host: rawHost, bracketed } = rawHostOf(authority);
  if (rawHost === '') throw refuse(field, 'URL must include a host');
  if (rawHost.includes('%')) throw refuse(field, 'host must not be percent-encoded');
  if (/[^\x00-\x7f]/.test(rawHost)) throw refuse(field, 'host must be ASCII (use the punycode xn-- form)');
  if (bracketed) {
    if (!/^[0-9a-f:.]+$/i.test(rawHost)) throw refuse(field, 'host is not a valid IPv6 address');
  } else {
    if (rawHost.endsWith('.')) throw refuse(field, 'host must not end with a dot');
    if (!/^[a-z0-9._-]+$/i.test(rawHost)) throw refuse(field, 'host contains characters not allowed in a host name');
    const lastLabel = rawHost.slice(rawHost.lastIndexOf('.') + 1);
    if (NUMERIC_LABEL.test(lastLabel) && !CANONICAL_IPV4.test(rawHost)) {
      throw refuse(field, 'IP addresses must be written in dotted-decimal form (a.b.c.d)');
    }
  }

  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse(field, 'URL is not valid');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse(field, 'URL must use the http or https scheme (e.g. https://host/path)');
  }
  if (url.username !== '' || url.password !== '') throw refuse(field, 'URL must not contain credentials (user:pass@)');
  const hostname = url.hostname;
  // Belt and braces: if WHATWG rewrote the host in a way the checks above did not foresee, refuse.
  if (!bracketed && hostname !== rawHost.toLowerCase()) throw refuse(field, 'host is not in canonical form');

  const bare = stripBrackets(hostname);
  const isIp = net.isIP(bare) !== 0;
  if (isIp ? isMetadataAddress(bare) : METADATA_HOSTS.has(bare)) {
    throw refuse(field, 'host is a cloud metadata endpoint');
  }

  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  // Before trust: no entry, bare or host:port, opens this service's own ports.
  if (trusted.namesOwnService(hostname, port)) {
    throw refuse(field, `${hostname}:${port} is one of this service's own ports (its listener or its database): no custom host may reach it, trusted or not`);
  }
  if (trusted.has(hostname, port)) return url;

  if (isIp) {
    if (isBlockedAddress(bare)) throw refuse(field, `host is a private or reserved IP address${allowHint(hostname, port)}`);
    return url;
  }
  const reason = internalNameReason(bare);
  if (reason !== null) throw refuse(field, `${reason}${allowHint(hostname, port)}`);
  return url;
}

// ---------------------------------------------------------------------------------------------
// Resolve and connect time
// ---------------------------------------------------------------------------------------------

/** Metadata addresses are refused even for trusted hosts; everything else only when untrusted. */
function refusedAddress(address: string, isTrusted: boolean): boolean {
  return isMetadataAddress(address) || (!isTrusted && isBlockedAddress(address));
}

/**
 * A `lookup` for http.request / net.connect that resolves with dns.lookup and fails with
 * BlockedAddressError when any resolved address is blocked. Checking every address, not only the
 * first, matters because autoSelectFamily (Node's default) may try them all.
 */
export function createGuardedLookup(trusted: TrustedHosts): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '');
        return;
      }
      const isTrusted = trusted.has(hostname);
      const bad = addresses.find((a) => refusedAddress(a.address, isTrusted));
      if (bad !== undefined) {
        callback(new BlockedAddressError(hostname, bad.address), '');
        return;
      }
      if (options.all === true) {
        callback(null, addresses);
        return;
      }
      const first = addresses[0];
      if (first === undefined) {
        const notFound: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        notFound.code = 'ENOTFOUND';
        callback(notFound, '');
        return;
      }
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Call from `socket.prependOnceListener('connect', ...)` so it runs before the request is written
 * (and once on a reused keep-alive socket, which emits no 'connect'): refuses when the peer is this
 * service itself (an own port on any address of this machine, however the URL spelled it and
 * whatever the trust list says), and when the peer address is blocked and the host is not trusted
 * on that port. A socket without a peer address cannot be verified and is refused.
 */
export function assertConnectedAddress(socket: net.Socket, hostname: string, trusted: TrustedHosts): void {
  const address = socket.remoteAddress;
  if (address === undefined) throw new BlockedAddressError(hostname, '(not connected)');
  const port = socket.remotePort === undefined ? undefined : String(socket.remotePort);
  if (port !== undefined && trusted.isOwnDestination(address, port)) throw new BlockedAddressError(hostname, address, { port, ownPort: true });
  if (refusedAddress(address, trusted.has(hostname, port))) throw new BlockedAddressError(hostname, address, { port });
}
