import { buildApp } from './app-builder.ts';

buildApp().app.synth();
