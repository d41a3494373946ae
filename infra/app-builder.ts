import { App, Validations, type AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ApiStack } from './stacks/api-stack.ts';
import { DataStack } from './stacks/data-stack.ts';

export interface BuildAppProps {
  /** Passed to the App (tests set outdir and context here). */
  readonly appProps?: AppProps;
  /** Register the cdk-nag packs as validation plugins, so synth fails on any unacknowledged finding. */
  readonly nag?: boolean;
}

export interface GantryApp {
  readonly app: App;
  readonly data: DataStack;
  readonly api: ApiStack;
}

/**
 * Builds the whole CDK app without synthesizing it. Stacks are environment-agnostic so synth
 * needs no AWS account; `cdk deploy` takes the account and region from the CLI's credentials.
 */
export function buildApp(props: BuildAppProps = {}): GantryApp {
  const app = new App({
    ...props.appProps,
    context: {
      // Exports and imports: CloudFormation refuses to delete or replace the table while the API uses it.
      '@aws-cdk/core:defaultCrossStackReferences': 'strong',
      ...props.appProps?.context,
    },
  });
  const data = new DataStack(app, 'Gantry-Data', { description: 'Gantry: the single DynamoDB table' });
  const api = new ApiStack(app, 'Gantry-Api', {
    description: 'Gantry: REST API, gateway and admin functions',
    table: data.table,
    blobs: data.blobs,
  });
  if (props.nag ?? true) {
    // cdk-nag 3 runs as CDK policy-validation plugins (not Aspects) and fails synth on findings.
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  }
  return { app, data, api };
}
