import { describe, expect, it } from 'vitest';
import { requestSecrets, targetSecrets } from '../../../../layers/core/src/gateway/scrub-sent.ts';

describe('requestSecrets', () => {
  it('takes the credential of every credential header, without its scheme', () => {
    const basic = Buffer.from('user:basic-password').toString('base64');
    const found = [
      ...requestSecrets(new URL('https://api.example.com/v1/chat'), {
        authorization: 'Bearer sk-live-123',
        'x-api-key': 'anthropic-key',
        'api-key': 'azure-key',
        'x-goog-api-key': 'google-key',
        'x-amz-security-token': 'session-token',
        'proxy-authorization': `Basic ${basic}`,
        'content-type': 'application/json',
        'openai-project': 'proj_1',
        'idempotency-key': 'client-chosen',
        'anthropic-version': '2023-06-01',
      }),
    ];
    expect(found).toEqual(
      expect.arrayContaining(['sk-live-123', 'anthropic-key', 'azure-key', 'google-key', 'session-token', basic, 'user:basic-password', 'basic-password']),
    );
    expect(found).not.toContain('application/json');
    expect(found).not.toContain('proj_1');
    expect(found).not.toContain('client-chosen');
    expect(found).not.toContain('2023-06-01');
  });

  it('takes the access key id of a SigV4 authorization', () => {
    const auth = 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE123/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=abc';
    expect([...requestSecrets(new URL('https://bedrock.example.com'), { authorization: auth })]).toContain('AKIDEXAMPLE123');
  });

  it('takes credential query parameters and a URL password', () => {
    const url = new URL('https://user:pa%2Fss@example.com/v1/models?key=google-key-1&api-version=2024-10-21&X-Amz-Signature=sig');
    const found = [...requestSecrets(url, {})];
    expect(found).toEqual(expect.arrayContaining(['pa/ss', 'google-key-1', 'sig']));
    expect(found).not.toContain('2024-10-21');
  });
});

describe('targetSecrets', () => {
  it('takes the key, the client key and secret options at any depth, never plain options', () => {
    const found = [
      ...targetSecrets(
        {
          api_key: 'config-key',
          options: {
            aws_secret_access_key: 'aws-secret',
            aws_session_token: 'aws-session',
            aws_region: 'us-east-1',
            azure_entra_client_secret: 'entra-secret',
            vertex_service_account_json: { private_key: '-----BEGIN PRIVATE KEY-----abc', client_email: 'sa@example.com' },
            azure_deployment_config: [{ azure_deployment_name: 'gpt4' }],
          },
        },
        'client-key',
      ),
    ];
    expect(found.sort()).toEqual(['-----BEGIN PRIVATE KEY-----abc', 'aws-secret', 'aws-session', 'client-key', 'config-key', 'entra-secret']);
  });
});
