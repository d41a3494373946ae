/**
 * Amazon SageMaker runtime, through the passthrough only: an endpoint's input and output are the
 * model container's own, so there is nothing to translate. `/v1/endpoints/{name}/invocations` (and
 * `invocations-response-stream`, `async-invocations`) goes to the region's runtime host, signed with
 * SigV4 for the `sagemaker` service with the same credentials as Bedrock (keys, session token or
 * an assumed role).
 */
import { ValidationError } from '../../http/errors.ts';
import type { NativeProvider } from '../transform.ts';
import * as declared from '../native-declarations.ts';
import { defineNative } from './define.ts';
import { awsCredentials, awsRegion, signAws } from './aws.ts';
import { bedrockError } from './bedrock.ts';

export const sagemaker: NativeProvider = defineNative(declared.sagemaker, {
  baseUrl: (ctx) => `https://runtime.sagemaker.${awsRegion(ctx)}.amazonaws.com`,
  async authenticate(req, ctx) {
    const region = awsRegion(ctx);
    const creds = await awsCredentials(ctx, region);
    if (!creds) throw ValidationError.field('aws_access_key_id', 'is required (with aws_secret_access_key), or aws_role_arn');
    return signAws(req, creds, region, 'sagemaker', ctx.clock.now());
  },
  // Same AWS JSON error shape (`message`, `x-amzn-errortype`) as Bedrock's.
  transformError: bedrockError,
});
