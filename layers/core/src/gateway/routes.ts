/** The gateway's routes: OpenAI-compatible endpoints, all through one pipeline. */
import type { RouteModule } from '../http/app.ts';
import type { RuntimeBindings } from '../http/bodies.ts';
import { handleGatewayRequest, type EndpointSpec } from './pipeline.ts';
import { parseChatRequest } from './validate/chat.ts';

const chat: EndpointSpec = { endpoint: 'chatComplete', validate: parseChatRequest };

export const gatewayModule: RouteModule = (app, deps) => {
  app.post('/v1/chat/completions', (c) => handleGatewayRequest(chat, c.req.raw, deps, c.env as RuntimeBindings | undefined));
};
