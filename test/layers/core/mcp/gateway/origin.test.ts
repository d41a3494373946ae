/** DNS rebinding on the MCP endpoint: which Host and Origin pairs may call, and the setting that lists origins. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../../layers/core/src/config.ts';
import { originPolicy, originRefusal } from '../../../../../layers/core/src/mcp/gateway/origin.ts';

const req = (url: string, origin?: string) => new Request(url, { method: 'POST', headers: origin === undefined ? {} : { origin } });
const local = originPolicy({ publicUrl: 'http://127.0.0.1:8787', mcpAllowedOrigins: ['https://app.example.com'] });

describe('the MCP Origin check', () => {
  it('lets a request without Origin through, whatever its Host (not a page in a browser)', () => {
    expect(originRefusal(req('http://evil.example.com/mcp/s'), local)).toBeUndefined();
  });

  it.each([
    ['its own origin on an IP address', 'http://127.0.0.1:8787/mcp/s', 'http://127.0.0.1:8787'],
    ['its own origin on localhost', 'http://localhost:8787/mcp/s', 'http://localhost:8787'],
    ['its own origin on IPv6 loopback', 'http://[::1]:8787/mcp/s', 'http://[::1]:8787'],
    ['its own origin on a .localhost name', 'http://gantry.localhost:8787/mcp/s', 'http://gantry.localhost:8787'],
    ['a listed origin, on any Host', 'http://127.0.0.1:8787/mcp/s', 'https://app.example.com'],
  ])('accepts %s', (_, url, origin) => {
    expect(originRefusal(req(url, origin), local)).toBeUndefined();
  });

  it('accepts its own origin on the host of GW_PUBLIC_URL, and on no other name', () => {
    const deployed = originPolicy({ publicUrl: 'https://gantry.example.com' });
    expect(originRefusal(req('https://gantry.example.com/v1/mcp/s', 'https://gantry.example.com'), deployed)).toBeUndefined();
    expect(originRefusal(req('https://other.example.com/v1/mcp/s', 'https://other.example.com'), deployed)).toMatch(/Host other\.example\.com .*DNS rebinding/);
  });

  it.each([
    ['a foreign origin', 'http://127.0.0.1:8787/mcp/s', 'https://evil.example.com', /Origin https:\/\/evil\.example\.com may not call/],
    [
      'a rebound name (Host and Origin both the foreign site)',
      'http://evil.example.com:8787/mcp/s',
      'http://evil.example.com:8787',
      /Host evil\.example\.com:8787 is not a name/,
    ],
    ['the same host on another port', 'http://127.0.0.1:8787/mcp/s', 'http://127.0.0.1:9999', /may not call/],
    ['an opaque origin', 'http://127.0.0.1:8787/mcp/s', 'null', /Origin null may not call/],
  ])('refuses %s', (_, url, origin, reason) => {
    expect(originRefusal(req(url, origin), local)).toMatch(reason);
  });

  it('`*` lets any origin call', () => {
    const any = originPolicy({ publicUrl: undefined, mcpAllowedOrigins: ['*'] });
    expect(originRefusal(req('http://evil.example.com/mcp/s', 'http://evil.example.com'), any)).toBeUndefined();
  });
});

describe('GW_MCP_ALLOWED_ORIGINS', () => {
  const env = (v: string) => ({ TABLE_NAME: 't', GW_MCP_ALLOWED_ORIGINS: v });

  it('reads origins separated by commas, and `*`', () => {
    expect(loadConfig(env(' https://app.example.com/ , http://localhost:3000,* ')).mcpAllowedOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:3000',
      '*',
    ]);
    expect(loadConfig({ TABLE_NAME: 't' }).mcpAllowedOrigins).toBeUndefined();
  });

  it.each(['https://app.example.com/path', 'app.example.com', 'ftp://files.example.com'])('refuses %s at start, naming the variable', (v) => {
    expect(() => loadConfig(env(v))).toThrow(ConfigError);
    expect(() => loadConfig(env(v))).toThrow(/GW_MCP_ALLOWED_ORIGINS/);
  });
});
