import { buildApp } from './app-builder.ts';
import { buildConsole } from './local-build.ts';

// `cdk deploy` uploads the console's build: make sure there is a current one (skipped when unchanged).
await buildConsole({ ifChanged: true });
buildApp().app.synth();
