# Gantry's local server as a container image: the same bundle `npm start` runs, with DynamoDB Local
# (a Java jar) keeping its data in /data. See docs/container.md.

# Build the server bundle (the Lambda functions' esbuild settings) with every dependency.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY infra ./infra
COPY lambdas ./lambdas
COPY layers ./layers
RUN node infra/local-build.ts server relay

# Run it: Node, a Java runtime for DynamoDB Local, the bundle and DynamoDB Local's jar; nothing else.
FROM node:24-bookworm-slim
# The JRE's post-install script needs the man directory that slim images leave out.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The bundle finds DynamoDB Local through node_modules, as it does in a checkout.
COPY --from=build /app/node_modules/amplify-dynamodb-simulator/package.json ./node_modules/amplify-dynamodb-simulator/package.json
COPY --from=build /app/node_modules/amplify-dynamodb-simulator/emulator ./node_modules/amplify-dynamodb-simulator/emulator
COPY --from=build /app/dist/local ./dist/local
# The Fargate realtime relay runs this image with `node dist/relay/main.mjs` (docs/realtime.md).
COPY --from=build /app/dist/relay ./dist/relay
RUN mkdir /data && chown node:node /data
USER node
# Listen on every interface of the container; DynamoDB Local's port (random) is not exposed.
ENV HOST=0.0.0.0 \
    PORT=8787 \
    GW_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8787) + '/v1/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# `docker stop` sends SIGTERM: requests in flight finish (GW_SHUTDOWN_GRACE_SECONDS) before it exits.
# Run with `--init` (compose: `init: true`) so that a process init reaps what the server does not.
# The heap flags bound resident memory under load (infra/local-build.ts, LOCAL_SERVER_NODE_FLAGS).
CMD ["node", "--enable-source-maps", "--max-semi-space-size=8", "--initial-old-space-size=32", "--heap-growing-percent=50", "dist/local/main.mjs"]
